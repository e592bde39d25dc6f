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

	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.other.test/token",service="registry"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	reg.Config.ErrorLog = log.New(io.Discard, "", 0)
	reg.StartTLS()
	defer reg.Close()
	deadAddr := testnet.ClosedAddr(t) // refuses: held by a socket that never listens

	cfg := fmt.Sprintf(`listen:
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
`, deadAddr, reg.Listener.Addr().String())
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(cfg), 0o644))

	var out bytes.Buffer
	err = Check(t.Context(), file, true, &out)
	if !errors.Is(err, ErrProbeFailed) {
		t.Errorf("Check = %v, want ErrProbeFailed (one upstream is down)", err)
	}
	text := out.String()
	row := strings.Fields(grepLines(text, "registry  "+reg.Listener.Addr().String()))
	if len(row) < 6 || strings.Join(row[2:6], " ") != "ok ok ok 401" {
		t.Errorf("row for the registry = %q, want TCP TLS MTLS ok and HTTP 401", row)
	}
	for _, want := range []string{
		"configuration OK (1 route, 2 upstreams)",
		"ROUTE     UPSTREAM",
		"registry  " + reg.Listener.Addr().String(),
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
