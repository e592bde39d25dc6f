// Package weedtest runs a real SeaweedFS (weed: master, volume, filer and
// S3 gateway) on loopback ports for one test, for the shared cache tier's
// tests. The binary is the one test/deps.sh builds
// (/opt/snigate-tools/bin/weed, or $SNIGATE_WEED); a test is skipped when
// it is not there.
//
//	w := weedtest.Start(t) // the bucket weedtest.Bucket exists and takes writes
//	ak, sk := w.KeyFiles(t)
//	w.Stop()    // SIGKILL: an outage
//	w.Restart() // the same data and ports again
package weedtest

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/snigate/snigate/internal/testnet"
)

// Binary is where test/deps.sh builds SeaweedFS; $SNIGATE_WEED overrides it.
const Binary = "/opt/snigate-tools/bin/weed"

// The bucket and the credentials of the identity weed is started with.
const (
	Bucket    = "snigate-cache"
	AccessKey = "snigate-test"
	SecretKey = "snigate-test-secret-key"
)

// readyTimeout bounds a start: weed answers S3 within seconds, and takes
// writes once its filer joined the lock ring (seconds more on a busy box).
const readyTimeout = 2 * time.Minute

// Server is a running SeaweedFS for one test.
type Server struct {
	t        testing.TB
	bin      string
	dir      string
	args     []string
	endpoint string
	cmd      *exec.Cmd
	exited   chan error
	tr       *http.Transport
	// Client is the test's own client (as the identity above): to corrupt
	// objects, leave leases, look at what the gateways stored.
	Client *minio.Client
}

// Start starts SeaweedFS with the bucket Bucket and waits until it takes
// writes. tb's cleanup kills it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := os.Getenv("SNIGATE_WEED")
	if bin == "" {
		bin = Binary
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Skipf("SeaweedFS not built (%v): run test/deps.sh", err)
	}
	w := &Server{t: tb, bin: bin, dir: tb.TempDir(), tr: &http.Transport{}}
	conf := w.writeIdentities()
	data := filepath.Join(w.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		tb.Fatal(err)
	}
	port := func() string { _, p, _ := net.SplitHostPort(testnet.HeldAddr(tb)); return p }
	s3 := port()
	w.args = []string{"server", "-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port=" + port(), "-master.port.grpc=" + port(),
		"-volume.port=" + port(), "-volume.port.grpc=" + port(),
		"-filer", "-filer.port=" + port(), "-filer.port.grpc=" + port(),
		"-filer.localSocket=" + filepath.Join(w.dir, "filer.sock"),
		"-s3", "-s3.port=" + s3, "-s3.port.grpc=" + port(), "-s3.port.iceberg=0", "-s3.port.lance=0",
		"-s3.config=" + conf, "-s3.localSocket=" + filepath.Join(w.dir, "s3.sock"),
		"-master.volumeSizeLimitMB=64", "-volume.max=16", "-master.telemetry=false"}
	w.endpoint = "http://127.0.0.1:" + s3
	cl, err := minio.New("127.0.0.1:"+s3, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""),
		BucketLookup: minio.BucketLookupPath, Transport: w.tr})
	if err != nil {
		tb.Fatal(err)
	}
	w.Client = cl
	tb.Cleanup(w.Stop)
	w.Restart()
	return w
}

// Endpoint is the S3 API's URL, http://127.0.0.1:PORT.
func (w *Server) Endpoint() string { return w.endpoint }

func (w *Server) writeIdentities() string {
	conf := filepath.Join(w.dir, "s3.json")
	ident := map[string]any{"identities": []any{map[string]any{"name": "snigate",
		"credentials": []any{map[string]string{"accessKey": AccessKey, "secretKey": SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"}}}}
	b, _ := json.Marshal(ident)
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		w.t.Fatal(err)
	}
	return conf
}

// KeyFiles writes the access and secret key in files of their own (as
// cache.shared names them) and returns their paths.
func (w *Server) KeyFiles(tb testing.TB) (access, secret string) {
	tb.Helper()
	dir := tb.TempDir()
	access, secret = filepath.Join(dir, "access_key"), filepath.Join(dir, "secret_key")
	for f, v := range map[string]string{access: AccessKey, secret: SecretKey} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return access, secret
}

// Restart starts weed (again, on the same data and ports) and waits, at
// most readyTimeout, until it takes writes: the S3 API's own answers are
// the readiness signal.
func (w *Server) Restart() {
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
	w.exited = make(chan error, 1)
	go func(cmd *exec.Cmd, exited chan<- error) { exited <- cmd.Wait() }(w.cmd, w.exited)
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := w.ready(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			w.dumpLog()
			w.t.Fatalf("SeaweedFS did not take writes within %s: %v", readyTimeout, err)
		}
		timer := time.NewTimer(delay)
		select {
		case err := <-w.exited:
			timer.Stop()
			w.exited <- err
			w.dumpLog()
			w.t.Fatalf("SeaweedFS exited: %v", err)
		case <-timer.C:
		}
	}
}

// ready makes the bucket, then writes and deletes an object: weed answers
// S3 before its filer has joined the lock ring, and its first write waits
// for that, so a write is the readiness signal.
func (w *Server) ready(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := w.Client.BucketExists(cctx, Bucket)
	if err == nil && !ok {
		err = w.Client.MakeBucket(cctx, Bucket, minio.MakeBucketOptions{})
	}
	if err == nil {
		_, err = w.Client.PutObject(cctx, Bucket, "ready", strings.NewReader("ready"), 5, minio.PutObjectOptions{})
	}
	if err == nil {
		err = w.Client.RemoveObject(cctx, Bucket, "ready", minio.RemoveObjectOptions{})
	}
	return err
}

func (w *Server) dumpLog() {
	b, _ := os.ReadFile(filepath.Join(w.dir, "weed.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	w.t.Logf("weed.log (tail):\n%s", b)
}

// Stop kills weed (SIGKILL: an outage, not a shutdown) and waits for it.
func (w *Server) Stop() {
	if w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
	w.cmd = nil
	w.tr.CloseIdleConnections()
}
