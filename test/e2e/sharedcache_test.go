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
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/snigate/snigate/internal/weedtest"
)

// The fleet world (TestSharedCacheFleet), beside the shared one:
//
//	           ┌─ 10.77.3i.0/24 ─ fleet-i (snigate, i = a b c) ─ 10.77.2i.0/24 ─ registry (A, B)
//	fleet-node ┤                      │ 10.77.4i.0/24
//	           └─ ...                 └──── fleet-s3 (SeaweedFS at 10.77.40.1)
//
// Each gateway has its own cache directory and the same bucket; the uplink
// of the fleet is the sum of the gateways' links to the registry namespace.
const (
	fleetSize    = 3
	fleetPulls   = 8 // parallel GETs of the layer, spread over the gateways
	fleetS3Addr  = "10.77.40.1"
	fleetS3Port  = "8333"
	fleetBucket  = "snigate-cache"
	fleetNSNames = "abc"
)

// fleet is the world of TestSharedCacheFleet.
type fleet struct {
	w      *world
	nsList []*netns
	node   *netns
	store  *netns
	gws    []*gateway
	dirs   []string // the gateways' cache directories
	weed   *proc
	keys   [2]string
	tlsCfg *tls.Config // what a node offers the gateways
}

// TestSharedCacheFleet is issue 31 end to end, its steps in order: three
// gateways with one SeaweedFS bucket and empty caches; 8 nodes' GETs of a
// 100 MiB layer through all three at once: the registry logs one GET of
// the layer, the fleet's uplink carries less than 1.3x its size, every GET
// gets the layer's bytes; a gateway started again with an empty cache
// serves it without the registry; an object corrupted in the bucket is not
// served and is replaced; SeaweedFS killed: a pull goes on through the
// registry, restarted: used again; a gateway SIGKILLed mid-fill: the pulls
// through the others complete (after its lease's 30s) and the bucket holds
// the layer's exact bytes.
func TestSharedCacheFleet(t *testing.T) {
	w := getWorld(t)
	if _, err := os.Stat(weedtest.Binary); err != nil {
		t.Skipf("SeaweedFS not built (%v): run test/deps.sh", err)
	}
	img := w.pushCachedImage(t)
	f := newFleet(t, w)

	t.Run("parallel GETs through three gateways: one registry GET", func(t *testing.T) {
		before := f.uplinkRxBytes(t)
		f.parallelGets(t, img, fleetPulls)
		w.waitRegistryRequests(t, "GET", img.layerURI, 1)
		if n := w.registryRequests(t, "GET", img.layerURI); n != 1 {
			t.Errorf("the registry logged %d GETs of the layer for the fleet, want 1", n)
		}
		up := f.uplinkRxBytes(t) - before
		t.Logf("the fleet's uplink carried %d bytes for a %d-byte layer (%.2fx)", up, img.size, float64(up)/float64(img.size))
		if float64(up) > uplinkFactor*float64(img.size) {
			t.Errorf("uplink carried %d bytes, more than %.1fx the layer (%d)", up, uplinkFactor, img.size)
		}
	})

	t.Run("a gateway started empty serves it from the bucket", func(t *testing.T) {
		g := f.gws[fleetSize-1]
		if err := g.proc.stop(); err != nil {
			t.Fatalf("snigate did not exit 0 on SIGTERM: %v", err)
		}
		if err := os.RemoveAll(f.dirs[fleetSize-1]); err != nil {
			t.Fatal(err)
		}
		if err := g.start(); err != nil {
			t.Fatal(err)
		}
		if err := f.getLayer(fleetSize-1, img); err != nil {
			t.Fatal(err)
		}
		if n := w.registryRequests(t, "GET", img.layerURI); n != 1 {
			t.Errorf("the registry logged %d GETs of the layer, want still 1", n)
		}
	})

	t.Run("an object corrupted in the bucket is not served and is replaced", func(t *testing.T) {
		f.corruptObject(t, img)
		f.restartEmpty(t, fleetSize-1)
		if err := f.getLayer(fleetSize-1, img); err != nil {
			t.Fatal(err)
		}
		w.waitRegistryRequests(t, "GET", img.layerURI, 2)
		f.waitObject(t, img)
	})

	t.Run("SeaweedFS stopped: pulls go on; restarted: used again", func(t *testing.T) {
		f.weed.kill()
		f.restartEmpty(t, fleetSize-1)
		if err := f.getLayer(fleetSize-1, img); err != nil {
			t.Fatal(err)
		}
		w.waitRegistryRequests(t, "GET", img.layerURI, 3)
		f.startWeed(t)
		f.restartEmpty(t, fleetSize-1)
		if err := f.getLayer(fleetSize-1, img); err != nil {
			t.Fatal(err)
		}
		if n := w.registryRequests(t, "GET", img.layerURI); n != 3 {
			t.Errorf("the registry logged %d GETs of the layer after the store came back, want still 3", n)
		}
	})

	t.Run("a gateway killed mid-fill: the others complete, nothing partial is stored", func(t *testing.T) {
		img2 := w.pushCachedImage(t)
		f.killMidFill(t, img2)
		f.waitObject(t, img2)
	})
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

// objectKey is the bucket's key of digest.
func objectKey(digest string) string {
	hex := strings.TrimPrefix(digest, "sha256:")
	return "e2e/sha256/" + hex[:2] + "/" + hex
}

// corruptObject overwrites the layer's object with other bytes of the
// same length, its metadata still naming the digest.
func (f *fleet) corruptObject(t *testing.T, img *cachedImage) {
	t.Helper()
	bad := strings.Repeat("x", int(img.size))
	_, err := f.s3Client(t).PutObject(context.Background(), fleetBucket, objectKey(img.layer), strings.NewReader(bad), img.size,
		minio.PutObjectOptions{UserMetadata: map[string]string{"Digest": img.layer}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitObject waits until the bucket holds exactly the layer's bytes.
func (f *fleet) waitObject(t *testing.T, img *cachedImage) {
	t.Helper()
	cl := f.s3Client(t)
	err := poll(startTries, 5*pollStep, func() error {
		obj, err := cl.GetObject(context.Background(), fleetBucket, objectKey(img.layer), minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer obj.Close()
		h := sha256.New()
		if _, err := io.Copy(h, obj); err != nil {
			return err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != img.layer {
			return fmt.Errorf("the bucket's object has digest %s, want %s", got, img.layer)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// killMidFill starts a GET of img's layer through gateway 0 alone (the
// fleet's fill: it takes the lease), SIGKILLs it after the first MiB, then
// GETs the layer through the two others, which must complete.
func (f *fleet) killMidFill(t *testing.T, img *cachedImage) {
	t.Helper()
	conn, err := tlsDialIn(f.node, gatewayAddr(0)+":443", f.tlsCfg.Clone())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * cmdTimeout))
	req, _ := http.NewRequest(http.MethodGet, "https://"+registryHost+img.layerURI, nil)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET through gateway 0: %v %v", resp, err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatalf("first MiB: %v", err)
	}
	f.gws[0].proc.kill()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := 1; i < fleetSize; i++ {
		wg.Go(func() { errs <- f.getLayer(i, img) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
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
		if err := g.start(); err != nil {
			t.Fatalf("start %s: %v", g.log, err)
		}
	}
	return f
}

func (f *fleet) makeNamespaces() error {
	for _, role := range []string{"fleet-node", "fleet-s3", "fleet-a", "fleet-b", "fleet-c"} {
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
	for i := range fleetSize {
		if err := f.linkGateway(i, f.nsList[2+i]); err != nil {
			return err
		}
	}
	return nil
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

// parallelGets sends n GETs of the layer from the node at once, spread
// over the gateways; each must read the layer's exact bytes.
func (f *fleet) parallelGets(t *testing.T, img *cachedImage, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- f.getLayer(i%fleetSize, img) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
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
