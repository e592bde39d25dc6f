package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/admin"
)

func (w *world) adminPost(path, body string) (int, string) {
	w.t.Helper()
	resp, err := http.Post("http://"+w.addrs.Admin.String()+path, "application/json", strings.NewReader(body))
	if err != nil {
		w.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAdminReloadAnswersCheckErrors: POST /api/reload of an invalid file
// answers 422 with the very lines `snigate check` prints for it, and GET
// /api/config keeps the failure while the old file stays in force.
func TestAdminReloadAnswersCheckErrors(t *testing.T) {
	w, _ := newFullWorld(t)
	before := w.g.ConfigStatus()
	w.writeConfig(strings.Replace(fmt.Sprintf(fullConfig, "127.0.0.1:1", forwarderAddr), "mode: bridge", "mode: bridgee", 1) + "  - {}\n")
	code, body := w.adminPost("/api/reload", "")
	<-w.reloaded
	checkErr := Check(context.Background(), w.file, false, io.Discard)
	if checkErr == nil {
		t.Fatal("check accepts the broken file")
	}
	var res admin.ReloadResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || code != http.StatusUnprocessableEntity {
		t.Fatalf("POST /api/reload = %d %s (%v), want 422", code, body, err)
	}
	if want := strings.Split(checkErr.Error(), "\n"); !slices.Equal(res.Errors, want) || len(want) < 2 {
		t.Errorf("reload errors:\n%s\ncheck prints:\n%s", strings.Join(res.Errors, "\n"), checkErr)
	}
	after := w.g.ConfigStatus()
	if after.SHA256 != before.SHA256 || after.LastReload == nil || after.LastReload.Result != admin.ReloadFailure {
		t.Errorf("config status after a rejected reload = %+v, want the old hash and the failure", after)
	}
}

// TestReadySwitchFailsReadyzWhileServing: the readiness switch off makes
// /readyz 503 and snigate_ready 0, and the gateway still routes.
func TestReadySwitchFailsReadyzWhileServing(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(listenConfig("127.0.0.1:0", "  admin: \"127.0.0.1:0\"\n", spliceRoute("a", "a.test", a.addr())))
	w.start()
	if code, body := w.adminPost("/api/ready", `{"ready": false}`); code != 200 {
		t.Fatalf("POST /api/ready = %d %s", code, body)
	}
	if code, body := w.adminGet("/readyz"); code != 503 || !strings.Contains(body, "switched off") {
		t.Errorf("/readyz = %d %q, want 503 naming the switch", code, body)
	}
	if w.g.Ready() {
		t.Error("Gateway.Ready (what the DNS side reads) is true with the switch off")
	}
	if _, m := w.adminGet("/metrics"); !strings.Contains(m, "\nsnigate_ready 0\n") {
		t.Error("snigate_ready is not 0 with the switch off")
	}
	c, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatalf("a gateway switched off must still serve: %v", err)
	}
	echoRoundTrip(t, c, "still serving")
	c.Close()
	w.adminPost("/api/ready", `{"ready": true}`)
	if code, _ := w.adminGet("/readyz"); code != 200 || !w.g.Ready() {
		t.Errorf("/readyz after the switch is on again = %d", code)
	}
}

// TestRoutesAPIShowsServingCertificate: GET /api/routes names the route,
// its names, mode and upstreams, and the CA a minting route signs with.
func TestRoutesAPIShowsServingCertificate(t *testing.T) {
	w, up := newFullWorld(t)
	code, body := w.adminGet("/api/routes")
	var routes []admin.Route
	if err := json.Unmarshal([]byte(body), &routes); err != nil || code != 200 || len(routes) != 1 {
		t.Fatalf("GET /api/routes = %d %s (%v)", code, body, err)
	}
	r := routes[0]
	if r.Route != "registry" || r.Mode != "bridge" || !slices.Equal(r.Upstreams, []string{up.addr()}) || !slices.Equal(r.Names, []string{"registry.test"}) {
		t.Errorf("route = %+v", r)
	}
	if r.Cert == nil || r.Cert.Source != "ca" || r.Cert.Subject != "CN=gateway test CA" || r.Cert.NotAfter.IsZero() {
		t.Errorf("serving certificate = %+v, want the world's CA", r.Cert)
	}
}

// TestPprofFollowsConfig: /debug/pprof/ is 404 until debug.pprof is set,
// and a reload turns it on.
func TestPprofFollowsConfig(t *testing.T) {
	w, up := newFullWorld(t)
	if code, _ := w.adminGet("/debug/pprof/cmdline"); code != 404 {
		t.Errorf("pprof without debug.pprof = %d, want 404", code)
	}
	w.writeConfig(fmt.Sprintf(fullConfig, up.addr(), forwarderAddr) + "debug:\n  pprof: true\n")
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	if code, _ := w.adminGet("/debug/pprof/cmdline"); code != 200 {
		t.Errorf("pprof with debug.pprof: true = %d, want 200", code)
	}
}

// TestVersionAPI: GET /api/version says which build runs.
func TestVersionAPI(t *testing.T) {
	w, _ := newFullWorld(t)
	code, body := w.adminGet("/api/version")
	if code != 200 || !strings.Contains(body, `"go_version": "go1.`) || !strings.Contains(body, `"version": `) {
		t.Fatalf("GET /api/version = %d %s", code, body)
	}
}
