package e2e

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The upgrade test's own gateway, beside the world's, in the bastion
// namespace: the same routes on other ports, so that the world's gateway
// is not touched.
const (
	upgradeTLSPort    = 8443
	upgradeAdminAddr  = "127.0.0.1:9091"
	upgradeDNSAddr    = ":5353"
	upgradeRepo       = "e2e/upgrade"
	upgradeLayerBytes = 48 << 20 // more than the socket buffers along the path hold
	// Bounds of the load kept on the gateway while it upgrades.
	maxUpgradeGets  = 5000
	maxUpgradePulls = 40
	downloadHead    = 1 << 20 // read before the upgrade, the rest after
)

// TestUpgradeRefusesNothing upgrades a running gateway from one binary to
// another (SIGUSR2, after the new build replaced the old on disk) while a
// node keeps opening connections (GET /v2/ on a new connection each time),
// pulls in a loop with skopeo, and has a long blob download half read:
// no connection is refused or fails, the download completes with the
// right digest through the old process, which exits 0 once it is done,
// and the new binary serves.
func TestUpgradeRefusesNothing(t *testing.T) {
	w := getWorld(t)
	dir := t.TempDir()
	installed, bin2 := w.buildUpgradeBinaries(t, dir)
	blob := w.pushUpgradeBlob(t, dir)
	old := w.startUpgradeGateway(t, dir, installed)
	t.Cleanup(func() { _ = old.stop() })

	download := w.openDownload(t, blob)
	load := w.startLoad(t)
	load.waitFor(t, 10, 1) // the loops run before the upgrade

	// The new build replaces the old one on disk, as a package upgrade does.
	if err := os.Rename(bin2, installed); err != nil {
		t.Fatal(err)
	}
	if err := old.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	newPid := waitUpgraded(t, old)
	t.Cleanup(func() { stopPid(t, newPid) })
	wantBinary(t, newPid, installed)

	download.finish(t)
	size := download.size
	waitExited(t, old, "the old process, once its last connection (the download) ended")
	g, p := load.counts()
	load.waitFor(t, g+10, p+2) // and go on against the new process alone
	gets, pulls := load.stop(t)
	t.Logf("through the upgrade: %d GETs on new connections and %d pulls, all ok; download of %d bytes ok", gets, pulls, size)
	if status, body, err := httpGetIn(w.bastion, upgradeAdminAddr, "/readyz"); err != nil || status != http.StatusOK {
		t.Fatalf("/readyz of the new process: %d %s %v", status, body, err)
	}
}

// buildUpgradeBinaries builds the old and the new snigate (two builds,
// told apart by their version) and installs the old one; it returns the
// installed path and the new build's.
func (w *world) buildUpgradeBinaries(t *testing.T, dir string) (installed, next string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := func(out, version string) {
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+version, "-o", out, "./cmd/snigate")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", version, err, b)
		}
	}
	installed, next = filepath.Join(dir, "bin", "snigate"), filepath.Join(dir, "snigate.new")
	build(installed, "e2e-upgrade-old")
	build(next, "e2e-upgrade-new")
	return installed, next
}

// upgradeBlob is a layer large enough that reading it takes a while.
type upgradeBlob struct {
	digest string // sha256:...
	size   int64
}

// pushUpgradeBlob pushes an image with one upgradeLayerBytes random layer to the
// registries and returns the layer.
func (w *world) pushUpgradeBlob(t *testing.T, dir string) upgradeBlob {
	t.Helper()
	l, err := random.Layer(upgradeLayerBytes, types.OCIUncompressedLayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.Write(filepath.Join(dir, "big"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: imageTag})); err != nil {
		t.Fatal(err)
	}
	edgeCerts, err := certsDir(dir, "certs-edge", w.registryCA.file, &w.edge)
	if err != nil {
		t.Fatal(err)
	}
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", edgeCerts,
		"oci:"+filepath.Join(dir, "big")+":"+imageTag, "docker://"+hostOf(registryAAddr)+"/"+upgradeRepo+":"+imageTag))
	if r.err != nil {
		t.Fatalf("push the big image: %s", r)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	size, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	return upgradeBlob{digest: d.String(), size: size}
}

// upgradeConfig is the world's gateway configuration, as the world wrote
// it, on ports of its own (no CONNECT listener, its own audit log), with
// a drain long enough for the download.
func (w *world) upgradeConfig(t *testing.T, tlsPort int, admin, dns string) string {
	t.Helper()
	b, err := os.ReadFile(w.gw.config)
	if err != nil {
		t.Fatal(err)
	}
	y := string(b)
	for from, to := range map[string]string{
		`tls: [":443"]`:        fmt.Sprintf(`tls: [":%d"]`, tlsPort),
		`dns: ":53"`:           fmt.Sprintf("dns: %q", dns),
		`admin: "` + adminAddr: `admin: "` + admin,
		"  drain: 2s\n":        "  drain: 60s\n",
	} {
		if !strings.Contains(y, from) {
			t.Fatalf("the world's configuration %s has no %s", w.gw.config, from)
		}
		y = strings.Replace(y, from, to, 1)
	}
	y = strings.Replace(y, fmt.Sprintf("  connect: \":%d\"\n", connectPort), "", 1)
	audit := filepath.Join(w.dir, "audit.log")
	y = strings.ReplaceAll(y, audit, filepath.Join(w.dir, fmt.Sprintf("audit-%d.log", tlsPort)))
	// its own cache directory: the world's gateway holds the world's (an
	// upgrade of this gateway then hands its directory over)
	cache := "        dir: " + filepath.Join(w.dir, "cache") + "\n"
	if !strings.Contains(y, cache) {
		t.Fatalf("the world's configuration %s has no cache dir line %q", w.gw.config, cache)
	}
	return strings.Replace(y, cache, "        dir: "+filepath.Join(w.dir, fmt.Sprintf("cache-%d", tlsPort))+"\n", 1)
}

// startUpgradeGateway runs the installed binary on upgradeConfig and waits
// for its /readyz.
func (w *world) startUpgradeGateway(t *testing.T, dir, bin string) *proc {
	t.Helper()
	cfg := filepath.Join(dir, "snigate.yaml")
	if err := os.WriteFile(cfg, []byte(w.upgradeConfig(t, upgradeTLSPort, upgradeAdminAddr, upgradeDNSAddr)), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(w.logs, "snigate-upgrade.log")
	return w.startAndWaitReady(t, "snigate-upgrade", logPath, upgradeAdminAddr,
		w.bastion.command(bin, "run", "-c", cfg, "--log-format", "json"))
}

// startAndWaitReady starts cmd and waits until admin answers /readyz 200.
func (w *world) startAndWaitReady(t *testing.T, name, logPath, admin string, cmd *exec.Cmd) *proc {
	t.Helper()
	p, err := startProc(name, logPath, cmd)
	if err != nil {
		t.Fatal(err)
	}
	err = poll(startTries, pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: exited: %v", errGaveUp, p.err)
		}
		status, _, err := httpGetIn(w.bastion, admin, "/readyz")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("/readyz: %d", status)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, p.tail(30))
	}
	return p
}

// download is a blob GET through the gateway, read in two parts.
type download struct {
	conn   io.ReadCloser
	body   *bufio.Reader
	hash   io.Writer
	sum    func() []byte
	digest string
	size   int64
	read   int64
}

// openDownload starts GET of the blob from the node and reads its first
// downloadHead bytes.
func (w *world) openDownload(t *testing.T, b upgradeBlob) *download {
	t.Helper()
	conn, err := tlsDialIn(w.node, fmt.Sprintf("%s:%d", bastionAddr, upgradeTLSPort), w.gatewayTLS(t, registryHost))
	if err != nil {
		t.Fatalf("open the download: %v", err)
	}
	fmt.Fprintf(conn, "GET /v2/%s/blobs/%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", upgradeRepo, b.digest, registryHost)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.ContentLength != b.size {
		t.Fatalf("GET the big blob: %v, want 200 with %d bytes: %v", resp.Status, b.size, err)
	}
	h := sha256.New()
	d := &download{conn: conn, body: bufio.NewReader(resp.Body), hash: h, sum: func() []byte { return h.Sum(nil) }, digest: b.digest, size: b.size}
	n, err := io.CopyN(h, d.body, downloadHead)
	d.read += n
	if err != nil {
		t.Fatalf("read the first %d bytes of the blob: %v", downloadHead, err)
	}
	return d
}

// finish reads the rest and checks the digest.
func (d *download) finish(t *testing.T) {
	t.Helper()
	defer d.conn.Close()
	n, err := io.Copy(d.hash, d.body)
	d.read += n
	if err != nil || d.read != d.size {
		t.Fatalf("the download across the upgrade: read %d of %d bytes: %v", d.read, d.size, err)
	}
	if got := "sha256:" + hex.EncodeToString(d.sum()); got != d.digest {
		t.Fatalf("downloaded digest %s, want %s", got, d.digest)
	}
}

// load keeps the gateway busy from the node: GETs on new connections and
// skopeo pulls, each loop bounded, until stop.
type load struct {
	done        chan struct{}
	wg          sync.WaitGroup
	mu          sync.Mutex
	changed     *sync.Cond // on mu: a request finished
	gets, pulls int
	failures    []string
}

func (w *world) startLoad(t *testing.T) *load {
	l := &load{done: make(chan struct{})}
	l.changed = sync.NewCond(&l.mu)
	addr := fmt.Sprintf("%s:%d", bastionAddr, upgradeTLSPort)
	cfg := w.gatewayTLS(t, registryHost)
	l.wg.Go(func() {
		for i := 0; i < maxUpgradeGets && !l.stopped(); i++ {
			l.record(&l.gets, getOnNewConn(w, addr, cfg))
		}
	})
	host := fmt.Sprintf("%s:%d", registryHost, upgradeTLSPort)
	l.wg.Go(func() {
		for i := 0; i < maxUpgradePulls && !l.stopped(); i++ {
			dest := filepath.Join(w.home, fmt.Sprintf("upgrade-pull-%d", i))
			r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts,
				"docker://"+imageRef(host), "oci:"+dest+":"+imageTag))
			os.RemoveAll(dest)
			var err error
			if r.err != nil {
				err = fmt.Errorf("%s", r)
			}
			l.record(&l.pulls, err)
		}
	})
	return l
}

func getOnNewConn(w *world, addr string, cfg *tls.Config) error {
	conn, err := tlsDialIn(w.node, addr, cfg)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+registryHost+"/v2/")
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET /v2/: %d", status)
	}
	return err
}

func (l *load) stopped() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *load) record(n *int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*n++
	if err != nil {
		l.failures = append(l.failures, err.Error())
	}
	l.changed.Broadcast()
}

func (l *load) counts() (gets, pulls int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gets, l.pulls
}

// waitFor waits until at least gets GETs and pulls pulls have finished,
// or a loop has reached its bound.
func (l *load) waitFor(t *testing.T, gets, pulls int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for (l.gets < gets || l.pulls < pulls) && l.gets < maxUpgradeGets && l.pulls < maxUpgradePulls {
		l.changed.Wait()
	}
	if l.gets < gets || l.pulls < pulls {
		t.Fatalf("the load stopped at its bound: %d GETs (want %d), %d pulls (want %d)", l.gets, gets, l.pulls, pulls)
	}
}

// stop ends both loops and fails t if any request failed.
func (l *load) stop(t *testing.T) (gets, pulls int) {
	t.Helper()
	close(l.done)
	l.wg.Wait()
	if len(l.failures) > 0 {
		t.Fatalf("%d of %d GETs and %d pulls failed through the upgrade; first: %s",
			len(l.failures), l.gets, l.pulls, l.failures[0])
	}
	if l.gets == 0 || l.pulls == 0 {
		t.Fatalf("the load did not run: %d GETs, %d pulls", l.gets, l.pulls)
	}
	return l.gets, l.pulls
}

// waitUpgraded waits for the old process's log line saying the new one
// serves, and returns the new process's pid.
func waitUpgraded(t *testing.T, old *proc) int {
	t.Helper()
	pid := 0
	err := poll(startTries, pollStep, func() error {
		f, err := os.Open(old.logPath)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e struct {
				Msg string `json:"msg"`
				Pid int    `json:"pid"`
				Err string `json:"err"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			switch {
			case strings.HasPrefix(e.Msg, "upgrade: the new process serves"):
				pid = e.Pid
				return nil
			case e.Msg == "upgrade failed; this process keeps serving":
				return fmt.Errorf("%w: %s", errGaveUp, e.Err)
			}
		}
		return fmt.Errorf("no upgrade line in %s yet", old.logPath)
	})
	if err != nil {
		t.Fatalf("upgrade: %v\n%s", err, old.tail(30))
	}
	return pid
}

// wantBinary checks that pid runs the file now at path (the new build),
// not the one it replaced.
func wantBinary(t *testing.T, pid int, path string) {
	t.Helper()
	running, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(running, onDisk) {
		t.Fatalf("process %d does not run the new build at %s", pid, path)
	}
}

// waitExited waits for p to exit 0 after its drain.
func waitExited(t *testing.T, p *proc, what string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(cmdTimeout):
		t.Fatalf("%s still runs %s after", what, cmdTimeout)
	}
	if p.err != nil {
		t.Fatalf("%s exited with %v, want 0\n%s", what, p.err, p.tail(30))
	}
}

// stopPid stops a gateway this test did not start itself (the new process
// of the upgrade, a child of the old one): SIGTERM, then it is waited for
// by polling, SIGKILL if it lingers.
func stopPid(t *testing.T, pid int) {
	gone := func() error {
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			return nil
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(b), ") Z ") {
			return nil // exited; its parent (init) reaps it
		}
		return fmt.Errorf("process %d still runs", pid)
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if err := poll(int(stopGrace/pollStep), pollStep, gone); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the upgraded gateway ignored SIGTERM: %v", err)
	}
}
