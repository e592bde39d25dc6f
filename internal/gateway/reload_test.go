package gateway

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

const spliceConfig = `listen:
  tls: ["127.0.0.1:0"]
  admin: "127.0.0.1:0"
timeouts:
  drain: %s
routes:
%s`

func spliceRoute(name, sni, upstream string) string {
	return fmt.Sprintf(`  - name: %s
    sni: [%s]
    mode: splice
    upstreams: [%q]
`, name, sni, upstream)
}

// TestReloadKeepsTunnelsAndAppliesNewRoutes: a reload that removes the
// route of an open tunnel does not cut it; new connections see the new
// routes at once.
func TestReloadKeepsTunnelsAndAppliesNewRoutes(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	b := startEcho(t, w.leaf("b.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	w.start()

	tunnel, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	echoRoundTrip(t, tunnel, "before reload")

	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("b", "b.test", b.addr())))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	<-w.reloaded

	echoRoundTrip(t, tunnel, "after reload, route a removed: the tunnel runs on")
	if c, err := w.dialTLS("b.test"); err != nil {
		t.Errorf("new route b after reload: %v", err)
	} else {
		echoRoundTrip(t, c, "b")
		c.Close()
	}
	if c, err := w.dialTLS("a.test"); err == nil {
		c.Close()
		t.Error("removed route a still accepts new connections")
	} else if !strings.Contains(err.Error(), "unrecognized name") {
		t.Errorf("removed route a: %v, want an unrecognized_name alert", err)
	}
}

// TestReloadRejectsInvalidFile: an invalid file is rejected with a log
// line, counted, and the running configuration stays in force.
func TestReloadRejectsInvalidFile(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	w.start()

	w.writeConfig("listen:\n  tls: [\"127.0.0.1:0\"]\nroutes:\n  - name: a\n    mode: sideways\n")
	if err := w.g.Reload(t.Context(), "test"); err == nil {
		t.Fatal("Reload accepted an invalid file")
	}
	<-w.reloaded
	if !w.logs.Contains("configuration reload rejected") || !w.logs.Contains("routes[0].mode") {
		t.Errorf("no log line naming the error:\n%s", w.logs)
	}
	c, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatalf("old route after a rejected reload: %v", err)
	}
	echoRoundTrip(t, c, "still here")
	c.Close()
	_, metrics := w.adminGet("/metrics")
	if !strings.Contains(metrics, `snigate_config_reloads_total{result="failure"} 1`) {
		t.Errorf("reload failure not counted:\n%s", grepLines(metrics, "reloads"))
	}
}

// TestSIGHUPAndFileChangeReload: SIGHUP reloads, and so does a change of
// the file on disk, without a signal.
func TestSIGHUPAndFileChangeReload(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	b := startEcho(t, w.leaf("b.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	w.start()

	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())+spliceRoute("b", "b.test", b.addr())))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := <-w.reloaded; err != nil {
		t.Fatalf("reload after SIGHUP: %v", err)
	}
	c, err := w.dialTLS("b.test")
	if err != nil {
		t.Fatalf("route added by SIGHUP reload: %v", err)
	}
	c.Close()

	// The file watcher saw the same change and may reload once more; the
	// next change must reload without a signal.
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("b", "b.test", b.addr())))
	for {
		if err := <-w.reloaded; err != nil {
			t.Fatalf("reload after file change: %v", err)
		}
		c, err := w.dialTLS("a.test")
		if err != nil {
			break // route a is gone: the file change was applied
		}
		c.Close()
	}
	if !w.logs.Contains("configuration file changed") {
		t.Errorf("no reload logged for the file change:\n%s", w.logs)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestReloadAppliesAllowList: listen.allow applies to new connections on
// reload, without a restart.
func TestReloadAppliesAllowList(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	cfg := func(allow string) string {
		return fmt.Sprintf("listen:\n  tls: [\"127.0.0.1:0\"]\n  allow: [%q]\nroutes:\n%s", allow, spliceRoute("a", "a.test", a.addr()))
	}
	w.writeConfig(cfg("10.0.0.0/8"))
	w.start()
	if c, err := w.dialTLS("a.test"); err == nil {
		c.Close()
		t.Fatal("a client outside listen.allow was served")
	}
	w.writeConfig(cfg("127.0.0.0/8"))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	c, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatalf("after the reload allowed 127.0.0.0/8: %v", err)
	}
	echoRoundTrip(t, c, "allowed now")
	c.Close()
	if w.logs.Contains("applies only after a restart") {
		t.Errorf("listen.allow reported as needing a restart:\n%s", w.logs)
	}
}

// TestReloadDropsRemovedDNSForwarders: the series of a DNS forwarder that
// a reload removed disappear from /metrics; the kept one stays.
func TestReloadDropsRemovedDNSForwarders(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	cfg := func(forward string) string {
		return fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
dns:
  answer: ["127.0.0.1"]
  forward: [%s]
routes:
%s`, forward, spliceRoute("a", "a.test", a.addr()))
	}
	w.writeConfig(cfg(`"127.0.0.1:5301", "127.0.0.1:5302"`))
	w.start()
	metrics := func() string {
		code, body := w.adminGet("/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		return body
	}
	kept, removed := `snigate_dns_upstream_up{upstream="127.0.0.1:5301"} 1`, `snigate_dns_upstream_up{upstream="127.0.0.1:5302"}`
	if m := metrics(); !strings.Contains(m, kept) || !strings.Contains(m, removed) {
		t.Fatalf("before the reload, want both forwarders' series:\n%s", grepLines(m, "snigate_dns_upstream"))
	}
	w.writeConfig(cfg(`"127.0.0.1:5301"`))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	<-w.reloaded
	if m := metrics(); !strings.Contains(m, kept) || strings.Contains(m, removed) {
		t.Errorf("after the reload, want 5301's series only:\n%s", grepLines(m, "snigate_dns_upstream"))
	}
}
