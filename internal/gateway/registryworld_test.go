package gateway

// A docker-registry process with htpasswd or token auth, and a token
// service after the distribution token specification, for the tests of
// routes[].http.auth (copied from regauth's tests, on the world's CA).

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/snigate/snigate/internal/pki"
)

// registryStartLimit bounds a docker-registry start on a busy machine; a
// failure bound, never a synchronisation.
const registryStartLimit = 30 * time.Second

// startDockerRegistry runs Debian's docker-registry over TLS (a leaf of
// ca for registry.test, localhost and 127.0.0.1) on 127.0.0.1:0 with
// authYAML as its auth section, waits for its "listening on" line and
// returns its address.
func startDockerRegistry(t *testing.T, ca *pki.Authority, authYAML string) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("docker-registry is not installed (test/deps.sh installs it)")
	}
	dir := t.TempDir()
	_, certPEM, keyPEM, err := ca.Leaf("registry.test", "registry.test", "localhost", "127.0.0.1")
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "registry.crt"), certPEM, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "registry.key"), keyPEM, 0o600))
	cfg := fmt.Sprintf(`version: 0.1
log: {level: info, formatter: text}
storage: {filesystem: {rootdirectory: %[1]s/data}}
http:
  addr: 127.0.0.1:0
  secret: gateway-test
  tls: {certificate: %[1]s/registry.crt, key: %[1]s/registry.key}
auth:
%[2]s
`, dir, authYAML)
	path := filepath.Join(dir, "config.yml")
	must(t, os.WriteFile(path, []byte(cfg), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", path)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait(); _ = pw.Close() })
	addr := make(chan string, 1)
	go scanRegistryListening(pr, addr)
	select {
	case a := <-addr:
		return a
	case <-time.After(registryStartLimit):
		t.Fatal("docker-registry did not log its listening address")
	}
	return ""
}

// scanRegistryListening sends the address of docker-registry's
// "listening on" line, then drains its output.
func scanRegistryListening(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), `msg="listening on `); ok {
			a, _, _ := strings.Cut(rest, `"`)
			a, _, _ = strings.Cut(a, ", tls")
			addr <- a
			break
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// htpasswdYAML writes an htpasswd file of users (bcrypt) in dir and
// returns docker-registry's auth section for it.
func htpasswdYAML(t *testing.T, dir string, users map[string]string) string {
	t.Helper()
	var b strings.Builder
	for u, pw := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		must(t, err)
		fmt.Fprintf(&b, "%s:%s\n", u, h)
	}
	path := filepath.Join(dir, "htpasswd")
	must(t, os.WriteFile(path, []byte(b.String()), 0o600))
	return "  htpasswd:\n    realm: gateway-basic\n    path: " + path
}

// tokenService answers GET with Basic credentials (or none: pull of
// public/ only) with an ES256 JWT whose x5c certificate the registry
// trusts, granting what the scopes ask. It counts requests per scope.
type tokenService struct {
	srv      *httptest.Server
	key      *ecdsa.PrivateKey
	cert     *x509.Certificate
	certFile string
	users    map[string]string

	mu     sync.Mutex
	counts map[string]int // scope -> requests
}

const (
	tokenIssuer      = "gateway-test-issuer"
	tokenServiceName = "gateway-test-registry"
)

func startTokenService(t *testing.T, ca *pki.Authority, users map[string]string) *tokenService {
	t.Helper()
	ts := &tokenService{users: users, counts: map[string]int{}}
	ts.newSigningKey(t)
	c, _, _, err := ca.Leaf("localhost", "localhost", "127.0.0.1")
	must(t, err)
	ts.srv = httptest.NewUnstartedServer(http.HandlerFunc(ts.serveToken))
	ts.srv.TLS = &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
	ts.srv.StartTLS()
	t.Cleanup(ts.srv.Close)
	return ts
}

func (ts *tokenService) newSigningKey(t *testing.T) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "token signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	ts.key = key
	ts.cert, err = x509.ParseCertificate(der)
	must(t, err)
	ts.certFile = filepath.Join(t.TempDir(), "token.crt")
	must(t, os.WriteFile(ts.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
}

// authYAML is docker-registry's auth section for this service. The realm
// names localhost: go-containerregistry (the test's pusher) refuses
// realms on loopback addresses.
func (ts *tokenService) authYAML() string {
	_, port, _ := net.SplitHostPort(ts.srv.Listener.Addr().String())
	return "  token:\n    realm: https://localhost:" + port + "/token\n    service: " + tokenServiceName +
		"\n    issuer: " + tokenIssuer + "\n    rootcertbundle: " + ts.certFile
}

// requests is how many tokens were asked for scope; total, for any.
func (ts *tokenService) requests(scope string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.counts[scope]
}

func (ts *tokenService) total() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, c := range ts.counts {
		n += c
	}
	return n
}

func (ts *tokenService) serveToken(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	scopes := q["scope"]
	ts.mu.Lock()
	ts.counts[strings.Join(scopes, " ")]++
	ts.mu.Unlock()
	user, pw, hasBasic := r.BasicAuth()
	if hasBasic && ts.users[user] != pw || q.Get("service") != tokenServiceName {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	jwt := ts.sign(user, tokenAccess(scopes, user))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": jwt, "expires_in": 300})
}

type tokenAccessEntry struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// tokenAccess grants what scopes ask: everything to a user, pull of
// public/ repositories to anonymous.
func tokenAccess(scopes []string, user string) []tokenAccessEntry {
	out := []tokenAccessEntry{}
	for _, s := range scopes {
		for _, e := range strings.Fields(s) {
			parts := strings.Split(e, ":")
			if len(parts) < 3 {
				continue
			}
			name, acts := strings.Join(parts[1:len(parts)-1], ":"), strings.Split(parts[len(parts)-1], ",")
			if user == "" {
				if !strings.HasPrefix(name, "public/") {
					continue
				}
				acts = []string{"pull"}
			}
			out = append(out, tokenAccessEntry{Type: parts[0], Name: name, Actions: acts})
		}
	}
	return out
}

// sign makes an ES256 JWT with an x5c header.
func (ts *tokenService) sign(sub string, acc []tokenAccessEntry) string {
	now := time.Now()
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(ts.cert.Raw)}})
	jti := make([]byte, 8)
	_, _ = rand.Read(jti)
	claims, _ := json.Marshal(map[string]any{"iss": tokenIssuer, "sub": sub, "aud": tokenServiceName, "exp": now.Add(5 * time.Minute).Unix(),
		"nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "jti": base64.RawURLEncoding.EncodeToString(jti), "access": acc})
	signed := b64url(header) + "." + b64url(claims)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, ts.key, sum[:])
	if err != nil {
		panic(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + b64url(sig)
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
