package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The cache (route "cache", cacheHost, http.cache.dir in the world's
// directory): an image with one 100 MiB layer, pulled by several nodes at
// once, crosses the bastion's uplink once.
const (
	cacheRepo       = "e2e/cached"
	cacheTag        = "big" // not imageTag: other tests look for that tag's records
	cacheLayerBytes = 100 << 20
	cachePulls      = 8 // parallel pulls
	// uplinkFactor bounds what the bastion's uplink may carry for the
	// parallel pulls, in layer sizes (one fetch, plus protocol and the
	// health checks).
	uplinkFactor = 1.3
	// failFast bounds a request's failure with the registries down and
	// offline: false.
	failFast = 5 * time.Second
)

// cachedImage is the image with one large layer, pushed to the registries.
type cachedImage struct {
	layout   string
	digest   string // manifest
	layer    string // the large layer's digest
	size     int64  // its length
	layerURI string // /v2/e2e/big/blobs/<layer>
}

// TestCache is issue 16 end to end, its steps in order (each one starts
// from the state the previous one left): parallel pulls on an empty
// cache, pulls from the cache, a restart, a corrupted file, Range, ctr,
// a blob deleted from the registry, and the registries stopped with
// offline on and off.
func TestCache(t *testing.T) {
	w := getWorld(t)
	img := w.pushCachedImage(t)
	gets := func() int { return w.registryRequests(t, http.MethodGet, img.layerURI) }
	heads := func() int { return w.registryRequests(t, http.MethodHead, img.layerURI) }

	t.Run("parallel pulls on an empty cache fetch the layer once", func(t *testing.T) {
		w.checkColdPulls(t, img)
	})
	t.Run("pulls from the cache fetch nothing", func(t *testing.T) {
		h0 := heads()
		w.parallelPulls(t, img, cachePulls)
		w.waitRegistryRequests(t, http.MethodHead, img.layerURI, h0+cachePulls) // the registry's yes, per node
		if n := gets(); n != 1 {
			t.Errorf("the registries logged %d GETs of the layer, want still 1", n)
		}
		w.waitCacheAudit(t, img.layer, "hit")
	})
	t.Run("after a restart the cache still serves", func(t *testing.T) {
		w.restartGateway(t)
		h0 := heads()
		w.parallelPulls(t, img, 1)
		w.waitRegistryRequests(t, http.MethodHead, img.layerURI, h0+1)
		if n := gets(); n != 1 {
			t.Errorf("the registries logged %d GETs of the layer after the restart, want still 1", n)
		}
	})
	t.Run("a cached file with one byte changed is fetched again", func(t *testing.T) {
		w.corruptCached(t, img.layer, img.size/2)
		w.parallelPulls(t, img, 1)
		w.waitRegistryRequests(t, http.MethodGet, img.layerURI, 2)
		if n := gets(); n != 2 {
			t.Errorf("the registries logged %d GETs of the layer, want 2 (the refetch)", n)
		}
	})
	t.Run("ranges are answered from the cache byte-exact", func(t *testing.T) {
		w.checkRanges(t, img)
		if n := gets(); n != 2 {
			t.Errorf("the registries logged %d GETs of the layer, want still 2", n)
		}
	})
	t.Run("ctr pulls through the cache", func(t *testing.T) {
		w.checkCtrPull(t, img)
	})
	t.Run("a blob deleted from the registry is not served although cached", func(t *testing.T) {
		w.checkDeletedBlob(t)
	})
	t.Run("registries stopped", func(t *testing.T) {
		w.checkRegistriesDown(t, img)
	})
	t.Run("snigate ctl cache shows and purges", func(t *testing.T) {
		w.checkCtlCache(t, img)
	})
}

// checkColdPulls: cachePulls parallel pulls on an empty cache make one
// GET of the layer, and the bastion's uplink carries it about once.
func (w *world) checkColdPulls(t *testing.T, img *cachedImage) {
	t.Helper()
	gets := func() int { return w.registryRequests(t, http.MethodGet, img.layerURI) }
	rx0 := w.uplinkRxBytes(t)
	w.parallelPulls(t, img, cachePulls)
	w.waitRegistryRequests(t, http.MethodGet, img.layerURI, 1)
	if n := gets(); n != 1 {
		t.Errorf("the registries logged %d GETs of the layer, want 1", n)
	}
	rx := w.uplinkRxBytes(t) - rx0
	if limit := int64(uplinkFactor * float64(img.size)); rx > limit {
		t.Errorf("the bastion's uplink carried %d bytes for %d pulls of a %d-byte layer, want < %d (%.1fx)",
			rx, cachePulls, img.size, limit, uplinkFactor)
	}
	t.Logf("uplink: %d bytes for %d pulls of %d (%.2fx)", rx, cachePulls, img.size, float64(rx)/float64(img.size))
	w.waitCacheAudit(t, img.layer, "miss")
}

// checkCtrPull: ctr pulls the image through the cache, which fetches
// nothing more.
func (w *world) checkCtrPull(t *testing.T, img *cachedImage) {
	t.Helper()
	gets := func() int { return w.registryRequests(t, http.MethodGet, img.layerURI) }
	ref := cacheHost + "/" + cacheRepo + ":" + cacheTag
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	defer runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	if r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref)); r.err != nil {
		t.Fatalf("ctr pull failed:\n%s", r)
	}
	if got, err := w.ctrd.imageDigest(w.node, ref); err != nil || got != img.digest {
		t.Fatalf("ctr pulled %s (%v), pushed %s", got, err, img.digest)
	}
	if n := gets(); n != 2 {
		t.Errorf("the registries logged %d GETs of the layer, want still 2", n)
	}
}

// checkCtlCache: `snigate ctl cache` lists the route's cache with its
// entries and hit ratio, /metrics has the contract's series, and `snigate
// ctl cache purge DIGEST` then `purge` empty it.
func (w *world) checkCtlCache(t *testing.T, img *cachedImage) {
	t.Helper()
	row := func(r result) []string {
		for _, line := range strings.Split(r.out, "\n") {
			if f := strings.Fields(line); len(f) >= 9 && f[0] == "cache" {
				return f
			}
		}
		t.Fatalf("no row for route cache:\n%s", r)
		return nil
	}
	r := w.gw.snigate("ctl", "--admin", adminAddr, "cache")
	if r.err != nil {
		t.Fatalf("%s", r)
	}
	if f := row(r); f[1] != w.spec.cacheDir || f[4] == "0" || f[6] == "0.0%" {
		t.Errorf("ctl cache row %q: want dir %s, entries and a hit ratio above 0", f, w.spec.cacheDir)
	}
	status, body, err := w.gw.admin("/metrics")
	if err != nil || status != http.StatusOK {
		t.Fatalf("/metrics: %d %v", status, err)
	}
	for _, series := range []string{`snigate_cache_requests_total{result="hit",route="cache"}`,
		`snigate_cache_requests_total{result="offline",route="cache"}`, `snigate_cache_bytes{route="cache"}`,
		`snigate_cache_upstream_bytes_total{route="cache"}`} {
		if !regexp.MustCompile(regexp.QuoteMeta(series) + ` [1-9]`).Match(body) {
			t.Errorf("/metrics has no %s above 0", series)
		}
	}
	if r := w.gw.snigate("ctl", "--admin", adminAddr, "cache", "purge", img.layer); r.err != nil {
		t.Fatalf("%s", r)
	}
	hx := strings.TrimPrefix(img.layer, "sha256:")
	if _, err := os.Stat(filepath.Join(w.spec.cacheDir, "sha256", hx[:2], hx)); err == nil {
		t.Errorf("the layer's file is still in the cache after ctl cache purge %s", img.layer)
	}
	r = w.gw.snigate("ctl", "--admin", adminAddr, "cache", "purge")
	if r.err != nil {
		t.Fatalf("%s", r)
	}
	if f := row(r); f[4] != "0" {
		t.Errorf("after ctl cache purge: %q, want 0 entries", f)
	}
}

// pushCachedImage writes the image with one cacheLayerBytes layer
// (random bytes, gzipped: a little larger than cacheLayerBytes) and pushes
// it to registry A.
func (w *world) pushCachedImage(t *testing.T) *cachedImage {
	t.Helper()
	l, err := random.Layer(cacheLayerBytes, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := oneLayerImage(l)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(w.dir, "big-image")
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: cacheTag}))
	}
	if err != nil {
		t.Fatal(err)
	}
	ld, _ := l.Digest()
	size, _ := l.Size()
	md, _ := img.Digest()
	b := &cachedImage{layout: dir, digest: md.String(), layer: ld.String(), size: size,
		layerURI: "/v2/" + cacheRepo + "/blobs/" + ld.String()}
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", filepath.Join(w.dir, "certs-edge"),
		"oci:"+dir+":"+cacheTag, "docker://"+hostOf(registryAAddr)+"/"+cacheRepo+":"+cacheTag))
	if r.err != nil {
		t.Fatalf("push: %s", r)
	}
	return b
}

func oneLayerImage(l v1.Layer) (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, l)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	return mutate.ConfigFile(img, cf)
}

// parallelPulls runs n skopeo pulls of img from the node at once, through
// the cache route; every one must end with the pushed digest.
func (w *world) parallelPulls(t *testing.T, img *cachedImage, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		dest := filepath.Join(t.TempDir(), "pulled")
		wg.Go(func() {
			r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts,
				"docker://"+cacheHost+"/"+cacheRepo+":"+cacheTag, "oci:"+dest+":"+cacheTag))
			if r.err != nil {
				errs <- fmt.Sprintf("pull %d failed:\n%s", i, r)
				return
			}
			if got, err := ociIndexDigest(dest, cacheTag); err != nil || got != img.digest {
				errs <- fmt.Sprintf("pull %d: digest %s (%v), pushed %s", i, got, err, img.digest)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// registryRequests counts the access-log lines of registries A and B for
// method and uri.
func (w *world) registryRequests(t *testing.T, method, uri string) int {
	t.Helper()
	re := regexp.MustCompile(`"` + method + ` ` + regexp.QuoteMeta(uri) + ` HTTP/[0-9.]+"`)
	n := 0
	for _, r := range []*registry{w.regA, w.regB} {
		b, err := os.ReadFile(r.proc.logPath)
		if err != nil {
			t.Fatal(err)
		}
		n += len(re.FindAll(b, -1))
	}
	return n
}

// waitRegistryRequests waits until the registries logged at least n
// requests for method and uri (a registry logs after its answer).
func (w *world) waitRegistryRequests(t *testing.T, method, uri string, n int) {
	t.Helper()
	err := poll(startTries, pollStep, func() error {
		if got := w.registryRequests(t, method, uri); got < n {
			return fmt.Errorf("%d of %d %s %s logged", got, n, method, uri)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// uplinkRxBytes reads rx_bytes of the bastion's interface facing the
// registries, inside the bastion namespace.
func (w *world) uplinkRxBytes(t *testing.T) int64 {
	t.Helper()
	r := runCmd(w.bastion.command("cat", "/sys/class/net/to-registry/statistics/rx_bytes"))
	if r.err != nil {
		t.Fatalf("%s", r)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(r.out), 10, 64)
	if err != nil {
		t.Fatalf("rx_bytes %q: %v", r.out, err)
	}
	return n
}

// restartGateway stops the gateway (SIGTERM, exit 0) and starts it again
// on the same configuration and cache directory.
func (w *world) restartGateway(t *testing.T) {
	t.Helper()
	if err := w.gw.proc.stop(); err != nil {
		t.Fatalf("snigate did not exit 0 on SIGTERM: %v", err)
	}
	err := w.gw.start()
	w.procs = append(w.procs, w.gw.proc)
	if err == nil {
		err = w.gw.waitAllHealthy()
	}
	if err != nil {
		t.Fatalf("restarting the gateway: %v", err)
	}
}

// corruptCached flips the byte at off of digest's file in the cache.
func (w *world) corruptCached(t *testing.T, digest string, off int64) {
	t.Helper()
	hx := strings.TrimPrefix(digest, "sha256:")
	path := filepath.Join(w.spec.cacheDir, "sha256", hx[:2], hx)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the cache has no file for %s: %v", digest, err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// checkRanges asks the cache route for ranges of the layer and compares
// them with the layer's bytes in the image's layout.
func (w *world) checkRanges(t *testing.T, img *cachedImage) {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(img.layout, "blobs", "sha256", strings.TrimPrefix(img.layer, "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	n := int64(len(content))
	for _, rg := range [][2]int64{{0, 0}, {1000, 1999}, {n/2 - 7, n/2 + 65536}, {n - 100, n - 1}} {
		status, body, _, err := w.cacheRequest(t, http.MethodGet, img.layerURI, map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", rg[0], rg[1])})
		if err != nil {
			t.Fatal(err)
		}
		if status != http.StatusPartialContent || !bytes.Equal(body, content[rg[0]:rg[1]+1]) {
			t.Errorf("Range bytes=%d-%d: %d, %d bytes; want 206 and those bytes of the layer", rg[0], rg[1], status, len(body))
		}
	}
}

// checkDeletedBlob: a blob pulled through the cache, then deleted from the
// registry (distribution's DELETE, with the edge certificate from the
// bastion), gets the registry's 404 although the cache holds it.
func (w *world) checkDeletedBlob(t *testing.T) {
	t.Helper()
	const repo = "e2e/deleted"
	content := []byte(fmt.Sprintf("deleted blob %d", time.Now().UnixNano()))
	d := w.uploadBlob(t, repo, content)
	uri := "/v2/" + repo + "/blobs/" + d
	if status, body, _, err := w.cacheRequest(t, http.MethodGet, uri, nil); err != nil || status != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("GET %s through the cache: %d %q (%v)", uri, status, body, err)
	}
	if status, _, _ := w.registryDo(t, http.MethodDelete, uri, "", nil); status != http.StatusAccepted {
		t.Fatalf("DELETE %s on the registry: %d, want 202", uri, status)
	}
	status, body, _, err := w.cacheRequest(t, http.MethodGet, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusNotFound || bytes.Contains(body, content) {
		t.Errorf("GET %s after its DELETE: %d %q; want the registry's 404, not the cached blob", uri, status, body)
	}
	hx := strings.TrimPrefix(d, "sha256:")
	if _, err := os.Stat(filepath.Join(w.spec.cacheDir, "sha256", hx[:2], hx)); err != nil {
		t.Errorf("the cache does not hold the deleted blob (%v): the test proves nothing", err)
	}
}

// uploadBlob pushes content to repo on registry A (POST, then PUT with
// the digest) and returns its digest.
func (w *world) uploadBlob(t *testing.T, repo string, content []byte) string {
	t.Helper()
	d := digestOf(content)
	status, h, _ := w.registryDo(t, http.MethodPost, "/v2/"+repo+"/blobs/uploads/", "", nil)
	loc := h.Get("Location")
	if status != http.StatusAccepted || loc == "" {
		t.Fatalf("POST upload: %d, Location %q", status, loc)
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	if i := strings.Index(loc, "/v2/"); i > 0 {
		loc = loc[i:]
	}
	if status, _, body := w.registryDo(t, http.MethodPut, loc+sep+"digest="+d, "application/octet-stream", content); status != http.StatusCreated {
		t.Fatalf("PUT upload: %d %s", status, body)
	}
	return d
}

// registryDo sends one request to registry A from the bastion with the
// edge certificate.
func (w *world) registryDo(t *testing.T, method, path, contentType string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	pool, err := certPool(w.registryCA.file)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(w.edge.certFile, w.edge.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tlsDialIn(w.bastion, registryAAddr, &tls.Config{ServerName: registryHost, RootCAs: pool,
		Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	status, h, b, err := exchangeOn(conn, method, "https://"+registryHost+path, contentType, body, nil)
	if err != nil {
		t.Fatalf("%s %s on the registry: %v", method, path, err)
	}
	return status, h, b
}

// cacheRequest sends one request from the node to the cache route.
func (w *world) cacheRequest(t *testing.T, method, path string, header map[string]string) (int, []byte, time.Duration, error) {
	t.Helper()
	start := time.Now()
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, cacheHost))
	if err != nil {
		return 0, nil, 0, err
	}
	defer conn.Close()
	status, _, body, err := exchangeOn(conn, method, "https://"+cacheHost+path, "", nil, header)
	return status, body, time.Since(start), err
}

// exchangeOn sends one HTTP/1.1 request on conn and reads the answer.
func exchangeOn(conn io.ReadWriter, method, url, contentType string, body []byte, header map[string]string) (int, http.Header, []byte, error) {
	if c, ok := conn.(interface{ SetDeadline(time.Time) error }); ok {
		_ = c.SetDeadline(time.Now().Add(cmdTimeout))
	}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return 0, nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// checkRegistriesDown stops both registries: with offline: true the
// cached image pulls by digest (audited offline), and content not held
// gets 503; with offline: false requests fail at once. The registries and
// the configuration are restored after.
func (w *world) checkRegistriesDown(t *testing.T, img *cachedImage) {
	t.Helper()
	spec := w.spec
	spec.offline = true
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	t.Cleanup(func() { w.restoreRegistries(t) })
	w.regA.proc.kill()
	w.regB.proc.kill()
	byDigest := "docker://" + cacheHost + "/" + cacheRepo + "@" + img.digest
	dest := filepath.Join(t.TempDir(), "offline")
	if r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts, byDigest, "oci:"+dest+":"+cacheTag)); r.err != nil {
		t.Errorf("offline: true: pull by digest with the registries down failed:\n%s", r)
	} else if got, err := ociIndexDigest(dest, cacheTag); err != nil || got != img.digest {
		t.Errorf("offline pull: digest %s (%v), pushed %s", got, err, img.digest)
	}
	w.waitCacheAudit(t, img.layer, "offline")
	notHeld := "/v2/" + cacheRepo + "/blobs/sha256:" + strings.Repeat("0", 64)
	if status, body, _, err := w.cacheRequest(t, http.MethodGet, notHeld, nil); err != nil || status != http.StatusServiceUnavailable ||
		!strings.Contains(string(body), `"code":"UNAVAILABLE"`) {
		t.Errorf("offline: true, content not held: %d %s (%v); want 503 with an OCI error", status, body, err)
	}
	w.reloadGateway(t, w.spec)
	status, body, took, err := w.cacheRequest(t, http.MethodGet, img.layerURI, nil)
	if err != nil || (status != http.StatusBadGateway && status != http.StatusServiceUnavailable) || took > failFast {
		t.Errorf("offline: false with the registries down: %d %q after %s (%v); want 502 or 503 within %s", status, body, took, err, failFast)
	}
	if r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts, byDigest, "oci:"+filepath.Join(t.TempDir(), "x")+":"+cacheTag)); r.err == nil {
		t.Errorf("offline: false: a pull with the registries down succeeded:\n%s", r)
	}
}

// reloadGateway writes spec as the configuration and sends SIGHUP; it
// returns once the gateway logged the reload.
func (w *world) reloadGateway(t *testing.T, spec gatewaySpec) {
	t.Helper()
	spec.connect = w.gw.connectSkip == ""
	count := func() (ok, rejected int) {
		_ = w.gw.logEvents(func(e logEvent) {
			switch e.Msg {
			case "configuration reloaded":
				ok++
			case "configuration reload rejected; the running configuration stays in force":
				rejected++
			}
		})
		return ok, rejected
	}
	ok0, rej0 := count()
	// Replaced whole: the gateway watches the file, and a write in place
	// can be read half done (an empty file, a rejected reload; seen
	// once in make test).
	if err := writeFileAtomic(w.gw.config, []byte(spec.yaml())); err != nil {
		t.Fatal(err)
	}
	if err := w.gw.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	err := poll(startTries, pollStep, func() error {
		ok, rej := count()
		switch {
		case rej > rej0:
			return fmt.Errorf("%w: the reload was rejected:\n%s", errGaveUp, w.gw.proc.tail(10))
		case ok <= ok0:
			return fmt.Errorf("no reload logged")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// restoreRegistries starts registries A and B again where they are not
// running and waits until the gateway has every upstream up.
func (w *world) restoreRegistries(t *testing.T) {
	for _, r := range []*registry{w.regA, w.regB} {
		if r.proc.running() {
			continue
		}
		if err := w.startRegistry(r); err != nil {
			t.Errorf("restart %s: %v", r.name, err)
		}
	}
	if err := w.gw.waitAllHealthy(); err != nil {
		t.Errorf("after restarting the registries: %v", err)
	}
}

// waitCacheAudit waits for an audit record of route cache, a 200 GET of
// digest, with the cache word want.
func (w *world) waitCacheAudit(t *testing.T, digest, want string) {
	t.Helper()
	w.waitAudit(t, func(r auditRecord) bool {
		return r.Route == "cache" && r.Digest == digest && r.Method == http.MethodGet && r.Status == http.StatusOK && r.Cache == want
	})
}
