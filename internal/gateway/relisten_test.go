package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/testnet"
)

// dialTLSAt opens a TLS connection to addr for sni, trusting the world's CA.
func (w *world) dialTLSAt(addr, sni string) (*tls.Conn, error) {
	d := &tls.Dialer{Config: &tls.Config{ServerName: sni, RootCAs: w.ca.Pool()}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

func listenConfig(tls, extra, route string) string {
	return fmt.Sprintf("listen:\n  tls: [%q]\n%sroutes:\n%s", tls, extra, route)
}

// TestReloadMovesTLSListener: a reload that changes listen.tls opens the
// new address and closes the old one (it used to log "applies only after a
// restart" and keep the old); the tunnel accepted on the old address goes
// on.
func TestReloadMovesTLSListener(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	route := spliceRoute("a", "a.test", a.addr())
	oldAddr, newAddr := testnet.HeldAddr(t), testnet.HeldAddr(t)
	w.writeConfig(listenConfig(oldAddr, "", route))
	w.start()
	open, err := w.dialTLSAt(oldAddr, "a.test")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	echoRoundTrip(t, open, "before")

	w.writeConfig(listenConfig(newAddr, "", route))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	c, err := w.dialTLSAt(newAddr, "a.test")
	if err != nil {
		t.Fatalf("the new listen.tls address after the reload: %v", err)
	}
	echoRoundTrip(t, c, "new address")
	c.Close()
	if _, err := net.Dial("tcp", oldAddr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial the removed address %s: %v, want connection refused", oldAddr, err)
	}
	echoRoundTrip(t, open, "the tunnel of the old listener goes on")
	if w.logs.Contains("applies only after a restart") || !w.logs.Contains("listener opened by the reload") {
		t.Errorf("want the listener change logged as applied:\n%s", w.logs)
	}
}

// TestReloadRejectsListenerThatCannotOpen: a new address that cannot be
// bound rejects the whole reload; the old listener keeps serving.
func TestReloadRejectsListenerThatCannotOpen(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	route := spliceRoute("a", "a.test", a.addr())
	oldAddr, taken := testnet.HeldAddr(t), testnet.ClosedAddr(t)
	w.writeConfig(listenConfig(oldAddr, "", route))
	w.start()
	w.writeConfig(listenConfig(taken, "", route))
	err := w.g.Reload(t.Context(), "test")
	<-w.reloaded
	if err == nil || !strings.Contains(err.Error(), "listen.tls "+taken) {
		t.Fatalf("Reload = %v, want listen.tls %s refused", err, taken)
	}
	c, err := w.dialTLSAt(oldAddr, "a.test")
	if err != nil {
		t.Fatalf("the old listener after a rejected reload: %v", err)
	}
	echoRoundTrip(t, c, "still here")
	c.Close()
}

// TestReloadAddsDNSListener: listen.dns added by a reload starts the DNS
// responder on it.
func TestReloadAddsDNSListener(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	route := spliceRoute("a", "a.test", a.addr())
	w.writeConfig(listenConfig("127.0.0.1:0", "", route))
	w.start()
	w.writeConfig(listenConfig("127.0.0.1:0", "  dns: \"127.0.0.1:0\"\ndns:\n  answer: [\"192.0.2.7\"]\n", route))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	w.g.reloadMu.Lock()
	addr := w.g.ls.dnsUDP.LocalAddr().String()
	w.g.reloadMu.Unlock()
	m := new(dns.Msg)
	m.SetQuestion("a.test.", dns.TypeA)
	r, err := dns.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query the DNS listener the reload added: %v", err)
	}
	if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), "192.0.2.7") {
		t.Fatalf("answer %v, want 192.0.2.7", r.Answer)
	}
}

// TestReloadMovesAdminListener: a new listen.admin serves the admin API
// after the reload, and the old address refuses.
func TestReloadMovesAdminListener(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	route := spliceRoute("a", "a.test", a.addr())
	oldAdmin, newAdmin := testnet.HeldAddr(t), testnet.HeldAddr(t)
	w.writeConfig(listenConfig("127.0.0.1:0", fmt.Sprintf("  admin: %q\n", oldAdmin), route))
	w.start()
	w.writeConfig(listenConfig("127.0.0.1:0", fmt.Sprintf("  admin: %q\n", newAdmin), route))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	resp, err := http.Get("http://" + newAdmin + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /readyz on the new listen.admin: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := net.Dial("tcp", oldAdmin); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial the old listen.admin %s: %v, want connection refused", oldAdmin, err)
	}
}
