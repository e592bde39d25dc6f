package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testkit/distribution"
	"github.com/snigate/snigate/oci"
)

const (
	authUser     = "robot"
	authPassword = "first-Passw0rd"
)

// authRouteConfig is a gateway with one http route with auth in front of
// the registry at %[1]s; redirect_allow lets the gateway reach the
// test's token service on loopback (a followed redirect's rules).
const authRouteConfig = `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%q]
    health: {check: tcp}
    serve: {ca_cert: ca.crt, ca_key: ca.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http:
      repositories: ["team/**", "public/**"]
      redirect_allow: ["127.0.0.1/32", "::1/128"]
      audit_log: audit.log
      auth: {username: robot, password_file: password}
`

// authWorld is a gateway whose route holds the registry's credentials,
// a docker-registry behind it (htpasswd, or auth: token with ts), and
// an image pushed to team/app:v1 with the right credentials.
type authWorld struct {
	*world
	reg    string
	ts     *distribution.TokenService // nil: htpasswd
	digest v1.Hash
}

// newAuthWorld starts it; password is what the gateway's password file
// holds.
func newAuthWorld(t *testing.T, token bool, password string) *authWorld {
	t.Helper()
	return newAuthWorldWith(t, token, password, "")
}

// newAuthWorldWith is newAuthWorld with more lines in the route's http
// section.
func newAuthWorldWith(t *testing.T, token bool, password, httpLines string) *authWorld {
	t.Helper()
	w := &authWorld{world: newWorld(t, "")}
	users := map[string]string{authUser: authPassword}
	o := distribution.Options{Htpasswd: users}
	if token {
		w.ts = startTokenService(t, w.ca, users)
		o = distribution.Options{Token: w.ts}
	}
	w.reg = startDockerRegistry(t, w.ca, o)
	must(t, os.WriteFile(filepath.Join(w.dir, "password"), []byte(password+"\n"), 0o600))
	w.digest = w.push(t, "team/app")
	w.writeConfig(strings.Replace(authRouteConfig, "%q", `"`+w.reg+`"`, 1) + httpLines)
	w.start()
	return w
}

// push writes a random image to repo:v1 on the registry directly, with
// the right credentials, and returns its digest.
func (w *authWorld) push(t *testing.T, repo string) v1.Hash {
	t.Helper()
	img, err := random.Image(4096, 2)
	must(t, err)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.ca.Pool()}}
	defer tr.CloseIdleConnections()
	ref, err := name.ParseReference(w.reg + "/" + repo + ":v1")
	must(t, err)
	must(t, remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: authUser, Password: authPassword}),
		remote.WithTransport(tr), remote.WithContext(t.Context())))
	d, err := img.Digest()
	must(t, err)
	return d
}

// node is a client with no credentials of its own reaching registry.test
// through the gateway; nodeAuth, when set, is sent on every request.
func (w *authWorld) node(t *testing.T, nodeAuth string) http.RoundTripper {
	t.Helper()
	tr := &http.Transport{ForceAttemptHTTP2: true, DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
		return w.dialTLS("registry.test", "h2", "http/1.1")
	}}
	t.Cleanup(tr.CloseIdleConnections)
	if nodeAuth == "" {
		return tr
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", nodeAuth)
		return tr.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// pull reads registry.test/repo:v1 through rt, every layer, and returns
// the image's digest.
func pullThrough(t *testing.T, rt http.RoundTripper, repo string) (v1.Hash, error) {
	t.Helper()
	ref, err := name.ParseReference("registry.test/" + repo + ":v1")
	must(t, err)
	return memregistry.PullImage(t.Context(), ref, rt)
}

// get sends GET path through rt and returns the status and body.
func get(t *testing.T, rt http.RoundTripper, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://registry.test"+path, nil)
	must(t, err)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := rt.RoundTrip(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, b
}

// tokens is snigate_http_auth_tokens_total{route="registry",result}, as
// the gateway's registry serves it.
func (w *authWorld) tokens(result string) int {
	w.t.Helper()
	n, ok := testkit.Gathered(w.t, w.g.registry, "snigate_http_auth_tokens_total", map[string]string{"route": "registry", "result": result})
	if !ok {
		return -1
	}
	return int(n)
}

// TestAuthRoutePullsWithTheGatewaysCredentials: nodes with no
// credentials pull through a route with auth from docker-registry with
// htpasswd (Basic) and with auth: token (a token service the gateway
// reaches itself): every digest right, whatever (wrong) Authorization
// the node sends itself; the audit records say "auth":"gateway".
func TestAuthRoutePullsWithTheGatewaysCredentials(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token bool
	}{{name: "htpasswd", token: false}, {name: "token service", token: true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAuthWorld(t, tc.token, authPassword)
			for _, nodeAuth := range []string{"", "Basic " + b64("robot:wrong-password"), "Bearer not-a-token"} {
				got, err := pullThrough(t, w.node(t, nodeAuth), "team/app")
				if err != nil {
					t.Fatalf("pull with the node's Authorization %q: %v", nodeAuth, err)
				}
				if got != w.digest {
					t.Fatalf("pulled %s, pushed %s", got, w.digest)
				}
			}
			audit := filepath.Join(w.dir, "audit.log")
			testkit.Poll(t, "the audit records of the pulls", func() bool {
				b, _ := os.ReadFile(audit)
				return bytes.Count(b, []byte(`"kind":"blob"`)) >= 3*2 // two layers, three pulls
			})
			b, err := os.ReadFile(audit)
			must(t, err)
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var rec struct{ Auth string }
				must(t, json.Unmarshal([]byte(l), &rec))
				if rec.Auth != "gateway" {
					t.Errorf("audit record %s: auth %q, want gateway", l, rec.Auth)
				}
			}
		})
	}
}

// TestAuthRouteRefusedRepositoryAsksNoToken: a repository outside the
// route's repositories gets 403 from the policy, and the gateway's
// credentials are never used for it: the token service is asked nothing.
func TestAuthRouteRefusedRepositoryAsksNoToken(t *testing.T) {
	w := newAuthWorld(t, true, authPassword)
	pushed := w.ts.Total() // the test's own push
	status, body := get(t, w.node(t, ""), "/v2/other/app/manifests/v1")
	if status != http.StatusForbidden || !strings.Contains(string(body), oci.CodeDenied) {
		t.Fatalf("GET outside the allow-list: %d %s, want 403 DENIED", status, body)
	}
	if n := w.ts.Total() - pushed; n != 0 {
		t.Fatalf("the token service was asked %d times for a refused repository, want 0", n)
	}
}

// TestAuthRouteRefusedCredentials: when the registry (htpasswd) or its
// token service refuses the gateway's credentials, the node gets 401
// with an OCI UNAUTHORIZED body saying so, no WWW-Authenticate, and the
// refusal is counted and logged.
func TestAuthRouteRefusedCredentials(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token bool
	}{{name: "htpasswd", token: false}, {name: "token service", token: true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAuthWorld(t, tc.token, "not-the-password")
			status, body := get(t, w.node(t, ""), "/v2/team/app/manifests/v1")
			var eb oci.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || status != http.StatusUnauthorized || len(eb.Errors) != 1 ||
				eb.Errors[0].Code != oci.CodeUnauthorized || eb.Errors[0].Message != oci.CredentialsRefusedMessage {
				t.Fatalf("GET with refused gateway credentials: %d %s, want 401 UNAUTHORIZED %q", status, body, oci.CredentialsRefusedMessage)
			}
			if n := w.tokens("refused"); n < 1 {
				t.Errorf("snigate_http_auth_tokens_total{result=refused} = %d, want at least 1", n)
			}
			if !w.logs.Contains("registry refused the gateway's credentials") || w.logs.Contains("not-the-password") {
				t.Errorf("want the refusal logged, without the password:\n%s", w.logs)
			}
		})
	}
}

// TestAuthRouteSharesTokensAcrossPulls: N pulls by several nodes of one
// repository fetch one token for its scope; the others are cached.
func TestAuthRouteSharesTokensAcrossPulls(t *testing.T) {
	const pulls = 5
	w := newAuthWorld(t, true, authPassword)
	for i := range pulls {
		got, err := pullThrough(t, w.node(t, ""), "team/app")
		if err != nil || got != w.digest {
			t.Fatalf("pull %d: %s, %v; want %s", i, got, err, w.digest)
		}
	}
	if n := w.ts.Requests("repository:team/app:pull"); n != 1 {
		t.Errorf("the token service was asked %d times for repository:team/app:pull in %d pulls, want 1", n, pulls)
	}
	if n := w.tokens("cached"); n < pulls {
		t.Errorf("snigate_http_auth_tokens_total{result=cached} = %d, want at least %d", n, pulls)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestCheckRefusesAuthFiles: `check` (and `run`, alike) refuse the
// credentials files users get wrong, at their key, naming the file and
// never a secret: an unreadable or empty password file, a docker config
// without an entry for the route's host.
func TestCheckRefusesAuthFiles(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	must(t, os.WriteFile(filepath.Join(dir, "empty.password"), nil, 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "ghcr.json"), []byte(`{"auths":{"ghcr.io":{"auth":"`+b64("robot:s3cret")+`"}}}`), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "reg.json"), []byte(`{"auths":{"reg.test":{"auth":"`+b64("robot:s3cret")+`"}}}`), 0o600))
	tests := []struct {
		name, auth string
		want       []string
	}{
		{name: "unreadable password file", auth: "{username: robot, password_file: missing.password}",
			want: []string{"snigate.yaml:12: routes[0].http.auth.password_file: cannot read missing.password: no such file or directory"}},
		{name: "empty password file", auth: "{username: robot, password_file: empty.password}",
			want: []string{"snigate.yaml:12: routes[0].http.auth.password_file: password file: parse empty.password: the password is empty"}},
		{name: "docker config without the host", auth: "{docker_config: ghcr.json}",
			want: []string{"snigate.yaml:12: routes[0].http.auth.docker_config: docker config ghcr.json: no credentials for the host reg.test: no auths entry, credHelpers or credsStore for it"}},
		{name: "docker config with the host", auth: "{docker_config: reg.json}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "snigate.yaml")
			yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") +
				"    http:\n      auth: " + tt.auth + "\n"
			must(t, os.WriteFile(file, []byte(yaml), 0o644))
			var out bytes.Buffer
			checkErr := Check(t.Context(), file, false, &out)
			if tt.want == nil {
				if checkErr != nil {
					t.Fatalf("check: %v", checkErr)
				}
				return
			}
			got := errorLines(t, checkErr, dir)
			if !slices.Equal(got, tt.want) {
				t.Errorf("check errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if strings.Contains(checkErr.Error(), "s3cret") {
				t.Errorf("a secret in check's output: %v", checkErr)
			}
		})
	}
}

// TestAuthRouteTagServedFromCacheAfterHEAD is the pull budget: with a
// cache, a manifest asked by tag whose digest the cache holds is checked
// with a HEAD upstream and served from the cache (Docker Hub counts
// manifest GETs, not HEADs): the second pull's tag GET is a hit, with
// the right digest, through the gateway's credentials.
func TestAuthRouteTagServedFromCacheAfterHEAD(t *testing.T) {
	w := newAuthWorldWith(t, true, authPassword, "      cache: {dir: cache}\n")
	for i := range 2 {
		got, err := pullThrough(t, w.node(t, ""), "team/app")
		if err != nil || got != w.digest {
			t.Fatalf("pull %d: %s, %v; want %s", i, got, err, w.digest)
		}
	}
	audit := filepath.Join(w.dir, "audit.log")
	var tagRecords []string
	testkit.Poll(t, "the audit records of both tag GETs", func() bool {
		b, _ := os.ReadFile(audit)
		tagRecords = tagRecords[:0]
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"kind":"manifest"`) && strings.Contains(l, `"reference":"v1"`) && strings.Contains(l, `"method":"GET"`) {
				tagRecords = append(tagRecords, l)
			}
		}
		return len(tagRecords) >= 2
	})
	if !strings.Contains(tagRecords[1], `"cache":"hit"`) || !strings.Contains(tagRecords[1], `"auth":"gateway"`) {
		t.Errorf("the second pull's tag GET: %s, want cache hit through the gateway's credentials", tagRecords[1])
	}
}

// TestAuthMetricsFollowReloads: snigate_http_auth_tokens_total's series
// of a route are created at 0 when it has http.auth, and removed when a
// reload drops the route's auth or the route.
func TestAuthMetricsFollowReloads(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	route := func(name string, auth bool) config.Route {
		r := config.Route{Name: name, HTTP: &config.HTTP{}}
		if auth {
			r.HTTP.Auth = &config.Auth{Anonymous: true}
		}
		return r
	}
	series := func() map[string]bool {
		got := map[string]bool{}
		for _, s := range testkit.AllSeries(t, reg, "snigate_http_auth_tokens_total") {
			if route, ok := s.Labels["route"]; ok {
				got[route] = true
			}
		}
		return got
	}
	old := &config.Config{Routes: []config.Route{route("hub", true), route("ghcr", true), route("plain", false)}}
	m.initRoutes(old, listenerLabels{})
	if got := series(); !got["hub"] || !got["ghcr"] || got["plain"] {
		t.Fatalf("series for routes %v, want hub and ghcr", got)
	}
	cur := &config.Config{Routes: []config.Route{route("hub", false), route("plain", false)}}
	m.prune(old, cur)
	m.initRoutes(cur, listenerLabels{})
	if got := series(); len(got) != 0 {
		t.Errorf("series for routes %v after a reload dropped every auth, want none", got)
	}
}
