package gateway

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testnet"
)

// TestCheckProbe: --probe dials each upstream of a bridge route: an mTLS
// registry whose /v2/ sends clients to a token realm on another host is
// reported ok on every step, with the realm host flagged as not routed,
// and the route's serve.client_ca reported as requiring node certificates.
func TestCheckProbe(t *testing.T) {
	dir := t.TempDir()
	ca, srvCert := writeProbePKI(t, dir)
	reg := startProbeRegistry(t, ca, srvCert)
	deadAddr := testnet.ClosedAddr(t) // refuses: held by a socket that never listens
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(fmt.Sprintf(checkProbeConfig, deadAddr, reg.Listener.Addr().String())), 0o644))

	var out bytes.Buffer
	err := Check(t.Context(), file, true, &out)
	if !errors.Is(err, ErrProbeFailed) {
		t.Errorf("Check = %v, want ErrProbeFailed (one upstream is down)", err)
	}
	wantProbeReport(t, out.String(), dir, reg.Listener.Addr().String(), deadAddr)
}

// checkProbeConfig is TestCheckProbe's configuration: a bridge route with
// client certificates to two upstreams, the dead one first.
const checkProbeConfig = `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%q, %q]
    health: {check: http, path: /v2/, expect_status: [200, 401]}
    serve: {cert: serve.crt, key: serve.key, client_ca: ca.crt, client_names: ["system:node:*"]}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http: {}
`

// writeProbePKI writes ca.crt, the gateway's client pair edge.* and its
// serving pair serve.* into dir, and returns the CA with the registry's
// serving certificate.
func writeProbePKI(t *testing.T, dir string) (*pki.Authority, tls.Certificate) {
	t.Helper()
	ca, err := pki.NewAuthority("probe CA")
	if err != nil {
		t.Fatal(err)
	}
	must(t, ca.WriteCA(dir, "ca"))
	_, err = ca.WriteLeaf(dir, "edge", "edge.test")
	must(t, err)
	_, err = ca.WriteLeaf(dir, "serve", "registry.test", "registry.test")
	must(t, err)
	srvCert, _, _, err := ca.Leaf("registry.test", "registry.test")
	must(t, err)
	return ca, srvCert
}

// startProbeRegistry is an mTLS registry whose every answer is a 401
// sending clients to a token realm on another host.
func startProbeRegistry(t *testing.T, ca *pki.Authority, srvCert tls.Certificate) *httptest.Server {
	t.Helper()
	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.other.test/token",service="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	reg.Config.ErrorLog = log.New(io.Discard, "", 0)
	reg.StartTLS()
	t.Cleanup(reg.Close)
	return reg
}

// wantProbeReport checks check --probe's report of TestCheckProbe's
// world: every step ok to the registry at regAddr, deadAddr failed.
func wantProbeReport(t *testing.T, text, dir, regAddr, deadAddr string) {
	t.Helper()
	row := strings.Fields(grepLines(text, "registry  "+regAddr))
	if len(row) < 6 || strings.Join(row[2:6], " ") != "ok ok ok 401" {
		t.Errorf("row for the registry = %q, want TCP TLS MTLS ok and HTTP 401", row)
	}
	for _, want := range []string{
		"configuration OK (1 route, 2 upstreams)",
		"ROUTE     UPSTREAM",
		"registry  " + regAddr,
		"token auth realm host auth.other.test is NOT routed",
		deadAddr + ": tcp failed",
		// the http route's own client: the dead upstream first, then the next one
		`registry: http: GET /v2/ through the route's HTTP client: 401 (Bearer realm="https://auth.other.test/token",service="registry")`,
		"registry: requires node certificates: nodes must present a client certificate (clientAuth) that chains to " +
			filepath.Join(dir, "ca.crt") + " (serve.client_ca), named like system:node:*;",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
