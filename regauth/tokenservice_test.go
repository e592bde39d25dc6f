package regauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// tokenService is a token service after the distribution token
// specification: GET with Basic credentials (or none: anonymous, pull of
// public/ only) or POST grant_type=refresh_token, answering an ES256 JWT
// whose x5c certificate the registry trusts (rootcertbundle) with the
// access claims asked for. It counts requests per scope.
type tokenService struct {
	srv       *httptest.Server
	key       *ecdsa.PrivateKey
	cert      *x509.Certificate
	certFile  string
	issuer    string
	service   string
	expiresIn int

	mu       sync.Mutex
	users    map[string]string // username -> password
	refresh  map[string]string // refresh token -> username
	counts   map[string]int    // scope -> requests
	subjects []string          // who each token was for
	pastExp  int               // the next n tokens are already expired for the registry
}

func startTokenService(t *testing.T, p *testPKI) *tokenService {
	t.Helper()
	ts := &tokenService{issuer: "regauth-test-issuer", service: "regauth-test-registry", expiresIn: 300,
		users: map[string]string{}, refresh: map[string]string{}, counts: map[string]int{}}
	ts.newSigningKey(t)
	ts.srv = httptest.NewUnstartedServer(http.HandlerFunc(ts.serveToken))
	ts.srv.TLS = p.serverTLS(t, "localhost", "127.0.0.1")
	ts.srv.StartTLS()
	t.Cleanup(ts.srv.Close)
	return ts
}

// newSigningKey makes the ES256 key and its self-signed certificate, the
// registry's rootcertbundle.
func (ts *tokenService) newSigningKey(t *testing.T) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "token signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ts.key = key
	if ts.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ts.certFile = filepath.Join(t.TempDir(), "token.crt")
	writeTestFile(t, ts.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// realm is the URL registries challenge with. It names localhost, not
// 127.0.0.1: go-containerregistry (the test's own pusher) refuses realms
// on loopback addresses.
func (ts *tokenService) realm() string {
	_, port, _ := net.SplitHostPort(ts.srv.Listener.Addr().String())
	return "https://localhost:" + port + "/token"
}

// authYAML is docker-registry's auth section for this service.
func (ts *tokenService) authYAML() string {
	return "  token:\n    realm: " + ts.realm() + "\n    service: " + ts.service + "\n    issuer: " + ts.issuer + "\n    rootcertbundle: " + ts.certFile
}

func (ts *tokenService) setUser(user, password string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.users[user] = password
}

func (ts *tokenService) addRefreshToken(token, user string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.refresh[token] = user
}

// requests returns how many tokens were asked for scope.
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
	user, ok := ts.authenticate(r)
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		q = r.PostForm
	}
	scopes := q["scope"]
	ts.mu.Lock()
	ts.counts[strings.Join(scopes, " ")]++
	past := ts.pastExp > 0
	if past {
		ts.pastExp--
	}
	ts.subjects = append(ts.subjects, user)
	ts.mu.Unlock()
	if !ok || q.Get("service") != ts.service {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	jwt := ts.sign(user, access(scopes, user), past)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": jwt, "access_token": jwt, "expires_in": ts.expiresIn,
		"issued_at": time.Now().UTC().Format(time.RFC3339)})
}

// authenticate returns who r is: a Basic user, a refresh token's user, or
// "" for anonymous; ok is false for wrong credentials.
func (ts *tokenService) authenticate(r *http.Request) (string, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if r.Method == http.MethodPost {
		if r.ParseForm() != nil || r.PostForm.Get("grant_type") != "refresh_token" {
			return "", false
		}
		u, ok := ts.refresh[r.PostForm.Get("refresh_token")]
		return u, ok
	}
	u, p, hasBasic := r.BasicAuth()
	if !hasBasic {
		return "", true
	}
	want, known := ts.users[u]
	return u, known && want == p
}

type accessEntry struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// access grants what scopes ask: everything to a user, pull of public/
// repositories to anonymous.
func access(scopes []string, user string) []accessEntry {
	out := []accessEntry{}
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
			out = append(out, accessEntry{Type: parts[0], Name: name, Actions: acts})
		}
	}
	return out
}

// sign makes an ES256 JWT with an x5c header.
func (ts *tokenService) sign(sub string, acc []accessEntry, expired bool) string {
	now := time.Now()
	exp := now.Add(time.Duration(ts.expiresIn) * time.Second)
	if expired {
		exp = now.Add(-time.Hour) // beyond the registry's leeway
	}
	header, _ := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(ts.cert.Raw)}})
	claims, _ := json.Marshal(map[string]any{"iss": ts.issuer, "sub": sub, "aud": ts.service, "exp": exp.Unix(),
		"nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "jti": base64.RawURLEncoding.EncodeToString(randBytes(8)), "access": acc})
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

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
