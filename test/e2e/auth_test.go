package e2e

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/testkit/distribution"
)

// The registries behind routes with http.auth, in the registry namespace
// (addresses added by the test): one with htpasswd, one with auth: token
// whose JWTs come from a token service in the harness. Neither the node
// nor its credentials (it has none) reach them or the token service.
const (
	basicAuthHost = "basic.registry.example.test" // route "basicauth": gateway holds htpasswd credentials
	tokenAuthHost = "jwt.registry.example.test"   // route "tokenauth": gateway gets JWTs from the token service
	basicRegAddr  = "10.77.2.40:443"
	jwtRegAddr    = "10.77.2.50:443"
	tokenSvcAddr  = "10.77.2.60:443"
	storageAddr   = "10.77.2.70:443" // the blob storage jwtreg redirects blob reads to
	authUser      = "e2e-robot"
	authPassword  = "e2e-Passw0rd"
)

// authRoutes is the YAML of the two routes with auth (appended to the
// world's routes by a reload), auditing to auditLog.
func (w *world) authRoutes(pwFile, auditLog string) string {
	var b strings.Builder
	for _, r := range []struct{ name, host, up string }{{"basicauth", basicAuthHost, basicRegAddr}, {"tokenauth", tokenAuthHost, jwtRegAddr}} {
		fmt.Fprintf(&b, `  - name: %s
    sni: [%q]
    mode: bridge
    upstreams: [%q]
    health: {check: tcp}
    serve: {ca_cert: %s, ca_key: %s}
    upstream_tls: {ca: %s}
    http:
      repositories: [%q]
      audit_log: %s
      auth: {username: %s, password_file: %s}
`, r.name, r.host, r.up, filepath.Join(w.spec.serveCA, "ca.crt"), filepath.Join(w.spec.serveCA, "ca.key"),
			w.registryCA.file, httpAllowed, auditLog, authUser, pwFile)
	}
	return b.String()
}

// authRegistries are the registries behind the auth routes and what
// they use.
type authRegistries struct {
	ts      *distribution.TokenService
	regs    []*registry // basicreg, jwtreg
	storage *distribution.StorageHost
}

// startAuthRegistries starts the two registries, the token service and
// the blob storage jwtreg redirects blob reads to (storage middleware
// redirect: the node has no route to it, the gateway follows), once per
// test, and stops them when it ends.
func (w *world) startAuthRegistries(t *testing.T) authRegistries {
	t.Helper()
	pki := filepath.Join(w.dir, "pki")
	for _, a := range []string{basicRegAddr, jwtRegAddr, tokenSvcAddr, storageAddr} {
		if err := run("ip", "-n", w.registry.name, "addr", "replace", hostOf(a)+"/24", "dev", "to-bastion"); err != nil {
			t.Fatal(err)
		}
	}
	ts := startTokenSvc(t, w, pki)
	storage := filepath.Join(w.dir, "storage") // shared: the world's image is there
	blobs := startStorageHost(t, w, pki, storage)
	htpasswd := filepath.Join(w.dir, "htpasswd")
	distribution.WriteHtpasswd(t, htpasswd, map[string]string{authUser: authPassword})
	var regs []*registry
	for _, r := range []struct{ name, host, addr, auth string }{
		{"basicreg", basicAuthHost, basicRegAddr, "auth:\n  htpasswd:\n    realm: e2e-basic\n    path: " + htpasswd + "\n"},
		{"jwtreg", tokenAuthHost, jwtRegAddr, "auth:\n" + ts.AuthYAML() + "\n" + distribution.RedirectYAML("https://"+hostOf(storageAddr))},
	} {
		kp, err := w.registryCA.issue(pki, r.name, r.host, hostOf(r.addr))
		if err != nil {
			t.Fatal(err)
		}
		reg := &registry{name: r.name, addr: r.addr, config: filepath.Join(w.dir, r.name+".yml")}
		if err := os.WriteFile(reg.config, []byte(registryConfig(r.addr, storage, kp)+r.auth), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := reg.start(w.registry, w.logs); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.proc.stop() })
		regs = append(regs, reg)
	}
	return authRegistries{ts: ts, regs: regs, storage: blobs}
}

// waitAuthorizedLog waits for r's "authorized request" line for uri: the
// registry accepted the gateway's credentials, and it shows the node's
// address (X-Forwarded-For).
func waitAuthorizedLog(t *testing.T, r *registry, uri string) string {
	t.Helper()
	var found string
	err := poll(startTries, pollStep, func() error {
		b, err := os.ReadFile(r.proc.logPath)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, `msg="authorized request"`) && strings.Contains(line, "http.request.uri="+uri+" ") {
				found = line
				return nil
			}
		}
		return fmt.Errorf("%s logged no authorized request for %s", r.name, uri)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestAuthRoutesPullWithTheGatewaysCredentials: a node with no
// credentials, and no route to any registry or token service, pulls
// with skopeo through routes with http.auth: from docker-registry with
// htpasswd, and from one with auth: token whose JWTs the gateway fetches
// from the harness's token service (one token for the scope, however
// many pulls). Every digest is right; the audit records say
// "auth":"gateway"; a repository outside http.repositories gets 403
// before any token is asked for.
func TestAuthRoutesPullWithTheGatewaysCredentials(t *testing.T) {
	w := getWorld(t)
	ar := w.startAuthRegistries(t)
	ts, regs := ar.ts, ar.regs
	pwFile := filepath.Join(w.dir, "registry.password")
	if err := os.WriteFile(pwFile, []byte(authPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := w.spec
	auditLog := filepath.Join(w.dir, "auth-audit.log") // the world's tests read the other one
	spec.extra = w.authRoutes(pwFile, auditLog)
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })

	for _, host := range []string{basicAuthHost, tokenAuthHost} {
		for range 2 {
			w.mustPullSkopeo(t, host, w.gatewayCerts)
		}
	}
	if n := ts.Requests("repository:" + imageRepo + ":pull"); n != 1 {
		t.Errorf("the token service was asked %d times for repository:%s:pull in two pulls, want 1", n, imageRepo)
	}
	for _, route := range []string{"basicauth", "tokenauth"} {
		rec := waitAuditFile(t, auditLog, func(r auditRecord) bool {
			return r.Route == route && r.Kind == "manifest" && r.Reference == imageTag && r.Status == http.StatusOK
		})
		if rec.Auth != "gateway" || rec.Digest != w.image.digest.String() {
			t.Errorf("audit record of %s's manifest pull: %+v, want auth gateway and digest %s", route, rec, w.image.digest)
		}
	}
	for _, r := range regs {
		if line := waitAuthorizedLog(t, r, "/v2/"+imageRepo+"/manifests/"+imageTag); !strings.Contains(line, "remoteaddr="+nodeAddr) {
			t.Errorf("%s authorized the pull without the node's address %s:\n%s", r.name, nodeAddr, line)
		}
	}
	before := ts.Total()
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, tokenAuthHost))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	status, _, err := roundTrip(conn, "https://"+tokenAuthHost+"/v2/other/app/manifests/"+imageTag)
	if err != nil || status != http.StatusForbidden {
		t.Errorf("GET outside http.repositories: %d (%v), want 403", status, err)
	}
	if n := ts.Total() - before; n != 0 {
		t.Errorf("the token service was asked %d times for a refused repository, want 0", n)
	}
}

const (
	e2eTokenService = "e2e-jwt-registry"
	e2eTokenIssuer  = "e2e-jwt-issuer"
)

// startTokenSvc is a token service after the distribution token
// specification, listening in the registry namespace: Basic credentials
// of authUser get an ES256 JWT granting what the scopes ask, signed by a
// key whose certificate the registry trusts; anonymous requests are
// refused.
func startTokenSvc(t *testing.T, w *world, pki string) *distribution.TokenService {
	t.Helper()
	cert, ln := w.registryListener(t, pki, "tokensvc", tokenSvcAddr)
	return distribution.NewTokenService(t, distribution.TokenOptions{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Listener: ln, HTTP2: true,
		Realm: "https://" + hostOf(tokenSvcAddr) + "/token", Issuer: e2eTokenIssuer, Service: e2eTokenService,
		Users: map[string]string{authUser: authPassword}, RefuseAnonymous: true, SignerName: "e2e token signer",
		RefreshTokens: true,
	})
}

// startStorageHost is the blob storage of jwtreg, listening in the
// registry namespace on storageAddr with a certificate of the registry
// CA (which the auth routes' upstream_tls.ca names, so the gateway
// trusts it as a redirect target), serving the registries' storage.
func startStorageHost(t *testing.T, w *world, pki, root string) *distribution.StorageHost {
	t.Helper()
	cert, ln := w.registryListener(t, pki, "blobstorage", storageAddr)
	return distribution.NewStorageHost(t, distribution.StorageOptions{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}}, Listener: ln, Root: root,
	})
}

// registryListener is a listener on addr in the registry namespace and a
// certificate for its host, named name, of the registry CA.
func (w *world) registryListener(t *testing.T, pki, name, addr string) (tls.Certificate, net.Listener) {
	t.Helper()
	kp, err := w.registryCA.issue(pki, name, hostOf(addr))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(kp.certFile, kp.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := w.registry.do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	return cert, ln
}
