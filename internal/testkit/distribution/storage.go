package distribution

import (
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// StorageOptions configures NewStorageHost.
type StorageOptions struct {
	TLS      *tls.Config  // the host's server configuration (required); client certificates are asked, never required
	Listener net.Listener // where it serves; a new 127.0.0.1:0 listener if nil
	Root     string       // the registry's storage rootdirectory, served as it is
}

// StorageRequest is one request a StorageHost answered.
type StorageRequest struct {
	Method, Path  string
	Authorization bool // the request carried an Authorization header
	ClientCert    bool // the TLS client presented a certificate
	Status        int
}

// StorageHost is the blob storage a registry redirects to (its storage
// "redirect" middleware, RedirectYAML): it serves the registry's storage
// directory over HTTPS, GET and HEAD only, and records whether each
// request came with an Authorization header or a client certificate,
// which a gateway following the redirect must not send.
type StorageHost struct {
	o    StorageOptions
	srv  *http.Server
	addr net.Addr

	mu   sync.Mutex
	reqs []StorageRequest
}

// NewStorageHost starts a storage host; the test's cleanup stops it.
func NewStorageHost(tb testing.TB, o StorageOptions) *StorageHost {
	tb.Helper()
	cfg := o.TLS.Clone()
	cfg.ClientAuth = tls.RequestClientCert
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatal(err)
		}
	}
	s := &StorageHost{o: o, addr: ln.Addr()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), TLSConfig: cfg, ReadHeaderTimeout: StartLimit}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.srv.ServeTLS(ln, "", "") }()
	tb.Cleanup(func() { _ = s.srv.Close(); <-done })
	return s
}

// Addr is where the host listens.
func (s *StorageHost) Addr() string { return s.addr.String() }

// RedirectYAML is docker-registry's middleware section sending blob
// reads to baseURL ("https://storage.example"): the registry answers a
// blob GET with 307 to baseURL + the blob's path in its storage.
func RedirectYAML(baseURL string) string {
	return "middleware:\n  storage:\n    - name: redirect\n      options:\n        baseurl: " + baseURL + "\n"
}

// Requests is every request answered so far, in order.
func (s *StorageHost) Requests() []StorageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StorageRequest(nil), s.reqs...)
}

func (s *StorageHost) serve(w http.ResponseWriter, r *http.Request) {
	status := s.answer(w, r)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, StorageRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization") != "",
		ClientCert: r.TLS != nil && len(r.TLS.PeerCertificates) > 0, Status: status})
}

// answer serves the file the path names below Root, blob data only.
func (s *StorageHost) answer(w http.ResponseWriter, r *http.Request) int {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return http.StatusMethodNotAllowed
	}
	p := path.Clean("/" + r.URL.Path)
	if !strings.HasPrefix(p, "/docker/registry/v2/blobs/") || path.Base(p) != "data" {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	f, err := os.Open(filepath.Join(s.o.Root, filepath.FromSlash(p)))
	if err != nil {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", fi.ModTime(), f)
	return http.StatusOK
}
