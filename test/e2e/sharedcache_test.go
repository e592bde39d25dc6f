package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/snigate/snigate/internal/weedtest"
)

// The fleet world (TestSharedCacheFleet), beside the shared one:
//
//	fleet-n0..7 ─ 10.77.6k.0/24 ─┐
//	           ┌─ 10.77.3i.0/24 ─ fleet-i (snigate, i = a b c d) ─ 10.77.2i.0/24 ─ registry (A, B)
//	fleet-node ┤                      │ 10.77.4i.0/24
//	           └─ ...                 └──── fleet-s3 (SeaweedFS at 10.77.40.1)
//
// Each gateway has its own cache directory and the same bucket; the uplink
// of the fleet is the sum of the gateways' links to the registry namespace.
// Gateways a, b and c start with the fleet; d, the fourth, is started
// later, empty. Nodes n0..n7 pull with skopeo through gateway k%3 (their
// /etc/hosts), n8 through d; fleet-node reaches every gateway by address
// (the tests' own GETs).
const (
	fleetSize    = 3 // gateways started with the fleet
	fleetFourth  = 3 // the index of the gateway started later
	fleetS3Addr  = "10.77.40.1"
	fleetS3Port  = "8333"
	fleetBucket  = "snigate-cache"
	fleetNSNames = "abcd"
)

// fleet is the world of TestSharedCacheFleet.
type fleet struct {
	w      *world
	nsList []*netns
	node   *netns
	store  *netns
	gws    []*gateway
	dirs   []string     // the gateways' cache directories
	nodes  []*fleetNode // fleetNodes through the first three, then one through the fourth
	weed   *proc
	keys   [2]string
	tlsCfg *tls.Config // what a node offers the gateways
}

// TestSharedCacheFleet is issue 31 end to end, its steps in order: three
// gateways with one SeaweedFS bucket and empty caches; 8 nodes pull (skopeo)
// an image with a 100 MiB layer through all three at once: every pull has
// the pushed digests, the registry logs one GET of the layer, the fleet's
// uplink (and its snigate_cache_upstream_bytes_total) less than 1.3x its
// size; a fourth gateway started empty serves it to a node without a
// registry GET of the layer; an object corrupted in the bucket is not
// served and is replaced; SeaweedFS killed: a pull goes on through the
// registry (the failures counted), restarted: used again; a gateway
// SIGKILLed mid-fill: the pulls through the others complete (one takes
// its lease over after 30s), and neither the bucket nor any cache
// directory holds anything partial.
func TestSharedCacheFleet(t *testing.T) {
	w := getWorld(t)
	if _, err := os.Stat(weedtest.Binary); err != nil {
		t.Skipf("SeaweedFS not built (%v): run test/deps.sh", err)
	}
	img := w.pushCachedImage(t)
	f := newFleet(t, w)

	t.Run("8 nodes pull through three gateways at once: one registry GET", func(t *testing.T) { f.checkFleetPull(t, img) })
	t.Run("a fourth gateway started empty serves it from the bucket", func(t *testing.T) { f.checkFourthGateway(t, img) })
	t.Run("an object corrupted in the bucket is not served and is replaced", func(t *testing.T) { f.checkCorruptObject(t, img) })
	t.Run("SeaweedFS stopped: pulls go on; restarted: used again", func(t *testing.T) { f.checkStoreOutage(t, img) })
	t.Run("a gateway killed mid-fill: the others complete, nothing partial is stored", func(t *testing.T) { f.checkKilledMidFill(t, img) })
}

// restartEmpty stops gateway i, empties its cache directory and starts it.
func (f *fleet) restartEmpty(t *testing.T, i int) {
	t.Helper()
	g := f.gws[i]
	if err := g.proc.stop(); err != nil {
		t.Fatalf("snigate did not exit 0 on SIGTERM: %v", err)
	}
	if err := os.RemoveAll(f.dirs[i]); err != nil {
		t.Fatal(err)
	}
	if err := g.start(); err != nil {
		t.Fatal(err)
	}
}

// newFleet builds the namespaces, starts SeaweedFS and the gateways; t's
// cleanup stops them and removes the namespaces.
func newFleet(t *testing.T, w *world) *fleet {
	t.Helper()
	f := &fleet{w: w, tlsCfg: w.gatewayTLS(t, registryHost)}
	t.Cleanup(f.teardown)
	if err := f.makeNamespaces(); err != nil {
		t.Fatalf("namespaces: %v", err)
	}
	f.startWeed(t)
	for i, g := range f.gws {
		if err := os.WriteFile(g.config, []byte(f.config(i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := g.snigate("check", "-c", g.config); r.err != nil {
			t.Fatalf("snigate check rejects the configuration:\n%s", r)
		}
		if i == fleetFourth {
			continue // started by its step
		}
		if err := g.start(); err != nil {
			t.Fatalf("start %s: %v", g.log, err)
		}
	}
	return f
}

func (f *fleet) makeNamespaces() error {
	for _, role := range []string{"fleet-node", "fleet-s3", "fleet-a", "fleet-b", "fleet-c", "fleet-d"} {
		ns, err := newNetns(role)
		if ns != nil {
			f.nsList = append(f.nsList, ns)
		}
		if err != nil {
			return err
		}
	}
	f.node, f.store = f.nsList[0], f.nsList[1]
	if err := f.store.addAddr("lo", fleetS3Addr+"/32"); err != nil {
		return err
	}
	for i := range len(fleetNSNames) {
		if err := f.linkGateway(i, f.nsList[2+i]); err != nil {
			return err
		}
	}
	for k := range fleetNodes {
		if err := f.addNode(k, k%fleetSize); err != nil {
			return err
		}
	}
	return f.addNode(fleetNodes, fleetFourth)
}

// linkGateway links gateway i to the node, the registries and the store.
func (f *fleet) linkGateway(i int, gw *netns) error {
	n := strconv.Itoa(i + 1)
	err := errors.Join(
		vethPair(f.node, "to-gw-"+n, []string{"10.77.3" + n + ".2/24"}, gw, "to-node", []string{"10.77.3" + n + ".1/24"}),
		vethPair(gw, "to-registry", []string{"10.77.2" + n + ".1/24"}, f.w.registry, "to-fleet-"+n, []string{"10.77.2" + n + ".2/24"}),
		vethPair(gw, "to-s3", []string{"10.77.4" + n + ".1/24"}, f.store, "to-gw-"+n, []string{"10.77.4" + n + ".2/24"}),
	)
	if err == nil {
		err = errors.Join(
			gw.ip("route", "add", "10.77.2.0/24", "via", "10.77.2"+n+".2"),
			gw.ip("route", "add", fleetS3Addr+"/32", "via", "10.77.4"+n+".2"),
		)
	}
	if err != nil {
		return err
	}
	name := "fleet-" + string(fleetNSNames[i])
	f.gws = append(f.gws, &gateway{bin: f.w.gw.bin, ns: gw, config: filepath.Join(f.w.dir, name+".yaml"),
		log: filepath.Join(f.w.logs, "snigate-"+name+".log")})
	f.dirs = append(f.dirs, filepath.Join(f.w.dir, name+"-cache"))
	return nil
}

// gatewayAddr is gateway i's address on the node's side.
func gatewayAddr(i int) string { return "10.77.3" + strconv.Itoa(i+1) + ".1" }

// startWeed runs SeaweedFS in its namespace and waits until the bucket
// exists and takes writes.
func (f *fleet) startWeed(t *testing.T) {
	t.Helper()
	dir := filepath.Join(f.w.dir, "fleet-s3")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	ident, _ := json.Marshal(map[string]any{"identities": []any{map[string]any{"name": "snigate",
		"credentials": []any{map[string]string{"accessKey": weedtest.AccessKey, "secretKey": weedtest.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List"}}}})
	conf := filepath.Join(dir, "s3.json")
	f.keys = [2]string{filepath.Join(dir, "access_key"), filepath.Join(dir, "secret_key")}
	for p, v := range map[string]string{conf: string(ident), f.keys[0]: weedtest.AccessKey, f.keys[1]: weedtest.SecretKey} {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := startProc("weed", filepath.Join(f.w.logs, "weed-fleet.log"), f.store.command(weedtest.Binary, "server",
		"-dir="+filepath.Join(dir, "data"), "-ip="+fleetS3Addr, "-ip.bind=0.0.0.0", "-filer", "-s3",
		"-s3.port="+fleetS3Port, "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config="+conf,
		"-filer.localSocket="+filepath.Join(dir, "filer.sock"), "-s3.localSocket="+filepath.Join(dir, "s3.sock"),
		"-master.volumeSizeLimitMB=256", "-volume.max=16", "-master.telemetry=false"))
	if err != nil {
		t.Fatal(err)
	}
	f.weed = p
	cl := f.s3Client(t)
	err = poll(startTries*6, 5*pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: weed exited: %v", errGaveUp, p.err)
		}
		return weedReady(cl)
	})
	if err != nil {
		t.Fatalf("SeaweedFS did not take writes: %v\n%s", err, p.tail(30))
	}
}

// s3Client is a client in the store's namespace.
func (f *fleet) s3Client(t *testing.T) *minio.Client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := f.store.do(func() (err error) {
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	cl, err := minio.New(fleetS3Addr+":"+fleetS3Port, &minio.Options{Transport: tr, BucketLookup: minio.BucketLookupPath,
		Creds: credentials.NewStaticV4(weedtest.AccessKey, weedtest.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// weedReady makes the bucket and writes an object (weed takes writes once
// its filer joined the lock ring, seconds after it answers).
func weedReady(cl *minio.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := cl.BucketExists(ctx, fleetBucket)
	if err == nil && !ok {
		err = cl.MakeBucket(ctx, fleetBucket, minio.MakeBucketOptions{})
	}
	if err == nil {
		_, err = cl.PutObject(ctx, fleetBucket, "ready", strings.NewReader("ok"), 2, minio.PutObjectOptions{})
	}
	return err
}

// config is gateway i's configuration: the registry route with a cache of
// its own and the fleet's bucket.
func (f *fleet) config(i int) string {
	serveCA := filepath.Join(f.w.dir, "gateway-ca")
	return fmt.Sprintf(`listen:
  tls: [":443"]
  admin: %q
routes:
  - name: registry
    sni: [%q]
    mode: bridge
    upstreams: [%q, %q]
    health:
      check: http
      interval: 1s
      timeout: 900ms
    serve:
      ca_cert: %s
      ca_key: %s
    upstream_tls:
      cert: %s
      key: %s
      ca: %s
    http:
      cache:
        dir: %s
        max_size: 2GiB
        shared:
          endpoint: "http://%s:%s"
          bucket: %s
          prefix: e2e/
          access_key_file: %s
          secret_key_file: %s
`, adminAddr, registryHost, registryAAddr, registryBAddr,
		filepath.Join(serveCA, "ca.crt"), filepath.Join(serveCA, "ca.key"),
		f.w.edge.certFile, f.w.edge.keyFile, f.w.registryCA.file, f.dirs[i],
		fleetS3Addr, fleetS3Port, fleetBucket, f.keys[0], f.keys[1])
}

// getLayer GETs the layer through gateway i from the node and checks its
// digest.
func (f *fleet) getLayer(i int, img *cachedImage) error {
	conn, err := tlsDialIn(f.node, gatewayAddr(i)+":443", f.tlsCfg.Clone())
	if err != nil {
		return fmt.Errorf("gateway %d: %w", i, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(4 * cmdTimeout))
	req, _ := http.NewRequest(http.MethodGet, "https://"+registryHost+img.layerURI, nil)
	if err := req.Write(conn); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return fmt.Errorf("gateway %d: %w", i, err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); err != nil || resp.StatusCode != 200 || got != img.layer {
		return fmt.Errorf("gateway %d: %d, %d bytes (%v), digest %s, want 200 and %s\n%s",
			i, resp.StatusCode, n, err, got, img.layer, tailFile(f.gws[i].log, 20))
	}
	return nil
}

// uplinkRxBytes is the sum of rx_bytes of the gateways' links to the
// registries.
func (f *fleet) uplinkRxBytes(t *testing.T) int64 {
	t.Helper()
	var sum int64
	for _, g := range f.gws {
		r := runCmd(g.ns.command("cat", "/sys/class/net/to-registry/statistics/rx_bytes"))
		if r.err != nil {
			t.Fatalf("%s", r)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(r.out), 10, 64)
		if err != nil {
			t.Fatalf("rx_bytes %q: %v", r.out, err)
		}
		sum += n
	}
	return sum
}

// teardown stops what still runs and removes the namespaces.
func (f *fleet) teardown() {
	for _, g := range f.gws {
		if g.proc != nil {
			g.proc.stop() //nolint:errcheck // the test checks the exits it cares about
		}
	}
	if f.weed != nil {
		f.weed.kill()
	}
	for _, ns := range f.nsList {
		if err := ns.remove(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		}
	}
}
