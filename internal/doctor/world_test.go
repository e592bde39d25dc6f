package doctor

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/pki"
)

// world is a node's view in one process: a DNS server (the gateway's
// responder) and an HTTPS registry on 127.0.0.1, a CA, and the node's
// files in a temporary directory.
type world struct {
	dir    string
	ca     *pki.Authority
	caFile string
	port   int    // the registry's TLS port
	dns    string // the responder, 127.0.0.1:PORT

	mu      sync.Mutex
	records map[string]string // name -> address ("" : NXDOMAIN)
	handler http.Handler
}

// names served by the registry's certificate.
const (
	regName   = "registry.test"
	authName  = "auth.test"
	blobsName = "blobs.test"
)

// newWorld builds a world; each tune changes the registry's TLS
// configuration before it starts.
func newWorld(t *testing.T, tune ...func(*tls.Config)) *world {
	t.Helper()
	ca, err := pki.NewAuthority("snigate test CA")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{dir: t.TempDir(), ca: ca, records: map[string]string{regName: "127.0.0.1", authName: "127.0.0.1", blobsName: "127.0.0.1"}}
	w.caFile = filepath.Join(w.dir, "ca.crt")
	must(t, os.WriteFile(w.caFile, ca.PEM, 0o644))
	w.handler = w.registry()
	w.startTLS(t, tune)
	w.dns = w.startDNS(t)
	must(t, os.WriteFile(filepath.Join(w.dir, "hosts"), []byte("127.0.0.1 localhost\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(w.dir, "certs.d"), 0o755))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) startTLS(t *testing.T, tune []func(*tls.Config)) {
	leaf, err := w.ca.Issue(pki.SANs(regName, authName, blobsName))
	must(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w.mu.Lock()
		h := w.handler
		w.mu.Unlock()
		h.ServeHTTP(rw, req)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // doctor's tls step hangs up after the handshake
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf.Pair}}
	for _, f := range tune {
		f(srv.TLS)
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	w.port = srv.Listener.Addr().(*net.TCPAddr).Port
}

// registry answers like a token-authenticated registry whose blobs
// redirect to blobs.test.
func (w *world) registry() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/", func(rw http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer tok" {
			rw.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="https://%s:%d/token",service="test"`, authName, w.port))
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case strings.Contains(req.URL.Path, "/manifests/"):
			fmt.Fprint(rw, `{"config":{"digest":"sha256:c0ffee"},"layers":[]}`)
		case strings.Contains(req.URL.Path, "/blobs/"):
			http.Redirect(rw, req, fmt.Sprintf("https://%s:%d/storage/c0ffee", blobsName, w.port), http.StatusTemporaryRedirect)
		default:
			fmt.Fprint(rw, "{}")
		}
	})
	mux.HandleFunc("/token", func(rw http.ResponseWriter, req *http.Request) { fmt.Fprint(rw, `{"token":"tok"}`) })
	mux.HandleFunc("/storage/", func(rw http.ResponseWriter, req *http.Request) { fmt.Fprint(rw, "blob") })
	return mux
}

func (w *world) startDNS(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(w.answer)}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return pc.LocalAddr().String()
}

// answer is the responder: A for known names, empty NOERROR for other
// types, NXDOMAIN for unknown names.
func (w *world) answer(rw dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	w.mu.Lock()
	addr, ok := w.records[strings.TrimSuffix(q.Name, ".")]
	w.mu.Unlock()
	switch {
	case !ok:
		m.Rcode = dns.RcodeNameError
	case q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP(addr)})
	}
	_ = rw.WriteMsg(m)
}

func (w *world) set(name, addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if addr == "" {
		delete(w.records, name)
		return
	}
	w.records[name] = addr
}

// config is a doctor Config for NAME in this world, trusting the CA.
func (w *world) config(name string) Config {
	return Config{Name: name, CA: w.caFile, DNS: w.dns, HostsFile: filepath.Join(w.dir, "hosts"),
		CertsDir: filepath.Join(w.dir, "certs.d"), ResolvConf: filepath.Join(w.dir, "resolv.conf"), ResolvedDir: filepath.Join(w.dir, "systemd")}
}

func (w *world) name() string   { return fmt.Sprintf("%s:%d", regName, w.port) }
func (w *world) image() string  { return w.name() + "/team/app:1" }
func gatewayAddr() []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} }

// doctor runs Run and returns ok and the lines by step.
func doctor(t *testing.T, cfg Config) (bool, map[string]string, string) {
	t.Helper()
	var out bytes.Buffer
	ok, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			lines[f[1]] = l
		}
	}
	return ok, lines, out.String()
}
