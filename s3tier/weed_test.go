package s3tier

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// weedBinary is where test/deps.sh builds SeaweedFS; SNIGATE_WEED
// overrides it.
const weedBinary = "/opt/snigate-tools/bin/weed"

const (
	testBucket    = "snigate-cache"
	testAccessKey = "snigate-test"
	testSecretKey = "snigate-test-secret-key"
)

// weed is a SeaweedFS server (master, volume, filer and S3 gateway) on
// loopback ports, in a directory of its own, for one test.
type weed struct {
	t        *testing.T
	bin      string
	dir      string
	args     []string
	s3       string // http://127.0.0.1:port
	cmd      *exec.Cmd
	waitExit chan error
	tr       *http.Transport
	admin    *minio.Client // the test's own client: corrupting objects, leaving leases
}

// startWeed starts SeaweedFS and waits until its S3 API answers and the
// bucket exists. The test is skipped when weed is not built (test/deps.sh).
func startWeed(t *testing.T) *weed {
	t.Helper()
	bin := os.Getenv("SNIGATE_WEED")
	if bin == "" {
		bin = weedBinary
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("SeaweedFS not built (%v): run test/deps.sh", err)
	}
	w := &weed{t: t, bin: bin, dir: t.TempDir()}
	conf := filepath.Join(w.dir, "s3.json")
	ident := map[string]any{"identities": []any{map[string]any{"name": "snigate",
		"credentials": []any{map[string]string{"accessKey": testAccessKey, "secretKey": testSecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"}}}}
	b, _ := json.Marshal(ident)
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p := freePorts(t, 4)
	data := filepath.Join(w.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	w.args = []string{"server", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + p[0], "-volume.port=" + p[1], "-filer", "-filer.port=" + p[2],
		"-filer.localSocket=" + filepath.Join(w.dir, "filer.sock"),
		"-s3", "-s3.port=" + p[3], "-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + conf,
		"-s3.localSocket=" + filepath.Join(w.dir, "s3.sock"),
		"-master.volumeSizeLimitMB=64", "-volume.max=16", "-master.telemetry=false"}
	w.s3 = "http://127.0.0.1:" + p[3]
	w.tr = &http.Transport{}
	admin, err := minio.New("127.0.0.1:"+p[3], &minio.Options{Creds: credentials.NewStaticV4(testAccessKey, testSecretKey, ""),
		BucketLookup: minio.BucketLookupPath, Transport: w.tr})
	if err != nil {
		t.Fatal(err)
	}
	w.admin = admin
	w.start()
	t.Cleanup(w.stop)
	return w
}

// freePorts returns n loopback ports that are free, each with its gRPC
// port (port+10000, weed's default) free too.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			continue
		}
		g, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		held = append(held, g)
		out = append(out, strconv.Itoa(port))
	}
	return out
}

// start runs weed and waits (at most a minute) until the bucket can be
// made or exists: the S3 API's own answer is the readiness signal.
func (w *weed) start() {
	w.t.Helper()
	w.cmd = exec.Command(w.bin, w.args...)
	log, err := os.OpenFile(filepath.Join(w.dir, "weed.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		w.t.Fatal(err)
	}
	defer log.Close()
	w.cmd.Stdout, w.cmd.Stderr = log, log
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w.cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- w.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		if err := w.ensureBucket(ctx); err == nil {
			w.waitExit = exited
			return
		} else if ctx.Err() != nil {
			w.dumpLog()
			w.t.Fatalf("SeaweedFS's S3 API did not become ready: %v", err)
		}
		select {
		case err := <-exited:
			w.dumpLog()
			w.t.Fatalf("SeaweedFS exited: %v", err)
		case <-time.After(delay):
		}
	}
}

// ensureBucket makes the bucket, then writes and deletes an object: weed
// answers S3 before its filer has joined the lock ring, and its first
// write waits for that (seconds), so a write is the readiness signal.
func (w *weed) ensureBucket(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := w.admin.BucketExists(cctx, testBucket)
	if err == nil && !ok {
		err = w.admin.MakeBucket(cctx, testBucket, minio.MakeBucketOptions{})
	}
	if err == nil {
		_, err = w.admin.PutObject(cctx, testBucket, "ready", strings.NewReader("ready"), 5, minio.PutObjectOptions{})
	}
	if err == nil {
		err = w.admin.RemoveObject(cctx, testBucket, "ready", minio.RemoveObjectOptions{})
	}
	return err
}

func (w *weed) dumpLog() {
	b, _ := os.ReadFile(filepath.Join(w.dir, "weed.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	w.t.Logf("weed.log (tail):\n%s", b)
}

// stop kills weed (SIGKILL: an outage, not a shutdown) and waits for it.
func (w *weed) stop() {
	if w.cmd == nil || w.cmd.Process == nil || w.waitExit == nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.waitExit
	w.cmd, w.waitExit = nil, nil
	w.tr.CloseIdleConnections()
}

// config is a Tier's Config on this weed, with key files of its own.
func (w *weed) config(t *testing.T, route string) Config {
	t.Helper()
	dir := t.TempDir()
	ak, sk := filepath.Join(dir, "ak"), filepath.Join(dir, "sk")
	for f, v := range map[string]string{ak: testAccessKey, sk: testSecretKey} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Config{Route: route, Endpoint: w.s3, Bucket: testBucket, Prefix: "test/",
		AccessKeyFile: ak, SecretKeyFile: sk, CallTimeout: 5 * time.Second, Owner: route}
}

func (w *weed) String() string { return fmt.Sprintf("weed at %s", w.s3) }
