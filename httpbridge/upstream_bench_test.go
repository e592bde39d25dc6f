package httpbridge

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/snigate/snigate/internal/pki"
)

// The registry of BenchmarkUpstreamProtocol runs in a process of its own
// (this test binary, TestBenchRegistryProcess), so that its CPU, the cost
// the upstream protocol puts on the registry, is measured apart from the
// gateway's and the node client's.
const (
	protoRegistryEnv = "HTTPBRIDGE_BENCH_REGISTRY" // the directory of its PKI files
	// protoProfileEnv names a file for the registry process's CPU
	// profile (go test -cpuprofile profiles the gateway's side only).
	protoProfileEnv  = "HTTPBRIDGE_BENCH_REGISTRY_CPUPROFILE"
	protoManifest    = "/v2/team/app/manifests/v1"
	protoSmallBlob   = "/v2/team/app/blobs/sha256:" + "1111111111111111111111111111111111111111111111111111111111111111"
	protoLargeBlob   = "/v2/team/app/blobs/sha256:" + "2222222222222222222222222222222222222222222222222222222222222222"
	protoManifestLen = 1500
	protoSmallLen    = 16 << 10
	protoLargeLen    = 8 << 20
)

// TestBenchRegistryProcess is the benchmark's registry when run as its
// child process: it serves the three answers over TLS (h2 and http/1.1,
// client certificates of the benchmark's CA required) on 127.0.0.1:0,
// prints its address, and returns when its standard input closes.
func TestBenchRegistryProcess(t *testing.T) {
	dir := os.Getenv(protoRegistryEnv)
	if dir == "" {
		t.Skip("the registry process of BenchmarkUpstreamProtocol")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "registry.crt"), filepath.Join(dir, "registry.key"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cas := x509.NewCertPool()
	cas.AppendCertsFromPEM(caPEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: protoBenchRegistry(), ErrorLog: discardLog(), TLSConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: cas,
		NextProtos: []string{"h2", "http/1.1"},
	}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	fmt.Println(ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
	<-served
}

// protoBenchRegistry answers the manifest, the small blob and the large blob,
// each of a fixed pattern, with the headers a registry sends.
func protoBenchRegistry() http.Handler {
	manifest := bytes.Repeat([]byte("m"), protoManifestLen)
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 2<<10) // 32 KiB
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		switch r.URL.Path {
		case protoManifest:
			h.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			h.Set("Content-Length", strconv.Itoa(len(manifest)))
			_, _ = w.Write(manifest)
		case protoSmallBlob:
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.Itoa(protoSmallLen))
			_, _ = w.Write(chunk[:protoSmallLen])
		case protoLargeBlob:
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Length", strconv.Itoa(protoLargeLen))
			for n := 0; n < protoLargeLen; n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			http.NotFound(w, r)
		}
	})
}

// protoRegistryProc is the running registry process.
type protoRegistryProc struct {
	addr string
	pid  int
}

// startBenchRegistry starts the registry process with p's registry
// certificate and CA, and stops it when tb ends.
func startBenchRegistry(tb testing.TB, p *testPKI) *protoRegistryProc {
	tb.Helper()
	dir := tb.TempDir()
	l, err := p.ca.Issue(pki.CommonName("registry"), pki.SANs(registryName, "127.0.0.1"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, _, err := l.Write(dir, "registry"); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), p.ca.PEM, 0o600); err != nil {
		tb.Fatal(err)
	}
	args := []string{"-test.run=^TestBenchRegistryProcess$", "-test.count=1"}
	if prof := os.Getenv(protoProfileEnv); prof != "" {
		args = append(args, "-test.cpuprofile="+prof)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), protoRegistryEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the registry process printed no address: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }() // "PASS", until it exits
	return &protoRegistryProc{addr: strings.TrimSpace(addr), pid: cmd.Process.Pid}
}

// cpu is the registry process's user plus system CPU so far.
func (r *protoRegistryProc) cpu(tb testing.TB) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])) // after "pid (comm) "
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// selfCPU is this process's (the gateway's and the node client's) CPU.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUpstreamProtocol measures the handler chain over real TLS on
// 127.0.0.1 (node client -> sni.Server -> Bridge -> registry process),
// one HTTP/1.1 keep-alive node connection, per upstream protocol: a
// manifest GET, a 16 KiB blob GET and an 8 MiB blob GET. Besides ns/op,
// B/op and allocs/op (of this process) it reports registry-cpu-us/op,
// the registry's CPU, and gateway-cpu-us/op, this process's (gateway and
// node client) CPU per request. The -par8 scenarios run 8 requests at
// a time over as many node connections.
func BenchmarkUpstreamProtocol(b *testing.B) {
	p := newTestPKI(b)
	reg := startBenchRegistry(b, p)
	scenarios := []struct {
		name, path string
		par        int
	}{
		{"manifest", protoManifest, 1}, {"blob16k", protoSmallBlob, 1}, {"blob8m", protoLargeBlob, 1},
		{"manifest-par8", protoManifest, 8}, {"blob16k-par8", protoSmallBlob, 8},
	}
	for _, proto := range []string{UpstreamHTTP1, UpstreamH2, UpstreamAuto} {
		b.Run(proto, func(b *testing.B) {
			w := newWorld(b, p, worldOpts{addrs: []string{reg.addr},
				cfg: Config{UpstreamProtocol: proto, Audit: discardAudit(b)}})
			node := w.node(b, "http/1.1")
			node.Transport.(*http.Transport).MaxIdleConnsPerHost = 8
			for _, sc := range scenarios {
				b.Run(sc.name, func(b *testing.B) { protoGet(b, node, reg, sc.path, sc.par) })
			}
		})
	}
}

// protoGet GETs path b.N times, par at a time, and reports the CPU per
// request of the registry and of this process.
func protoGet(b *testing.B, node *http.Client, reg *protoRegistryProc, path string, par int) {
	b.SetBytes(protoFetch(b, node, path, make([]byte, copyBufferSize))) // and a connection is made
	b.ReportAllocs()
	regCPU, ownCPU := reg.cpu(b), selfCPU()
	if par == 1 {
		buf := make([]byte, copyBufferSize)
		for b.Loop() {
			protoFetch(b, node, path, buf)
		}
	} else {
		b.SetParallelism((par + 1) / 2) // GOMAXPROCS 2 here
		b.RunParallel(func(pb *testing.PB) {
			buf := make([]byte, copyBufferSize)
			for pb.Next() {
				protoFetch(b, node, path, buf)
			}
		})
	}
	b.ReportMetric(float64((reg.cpu(b)-regCPU).Microseconds())/float64(b.N), "registry-cpu-us/op")
	b.ReportMetric(float64((selfCPU()-ownCPU).Microseconds())/float64(b.N), "gateway-cpu-us/op")
}

// protoFetch GETs path through node and reads the answer with buf.
func protoFetch(b *testing.B, node *http.Client, path string, buf []byte) int64 {
	resp, err := node.Get("https://" + registryName + path)
	if err != nil {
		b.Error(err)
		return 0
	}
	n, err := io.CopyBuffer(io.Discard, resp.Body, buf)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("GET %s: %d, %d bytes, %v", path, resp.StatusCode, n, err)
	}
	return n
}

// discardAudit is an audit log that writes its records nowhere.
func discardAudit(tb testing.TB) *AuditLog {
	f := startAudit("bench", fixedWriter{io.Discard}, DefaultAuditQueue, slog.New(slog.DiscardHandler), nil)
	f.refs = 1
	a := &AuditLog{f: f}
	tb.Cleanup(func() { _ = a.Close() })
	return a
}
