package sni

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// TestTableLookupInvalidNamesMatchNothing is issue 14 item 8: ".reg.test",
// "*.reg.test", a 300-byte label and a name over 253 bytes all matched the
// wildcard route (and were dialed); none of them is a host name, so none
// matches a route, not even the default route.
func TestTableLookupInvalidNamesMatchNothing(t *testing.T) {
	pool := newPool(t, "x", "127.0.0.1:1")
	exact := &Route{Name: "exact", SNI: []string{registryName}, Mode: ModeSplice, Pool: pool}
	wild := &Route{Name: "wild", SNI: []string{"*." + registryName}, Mode: ModeSplice, Pool: pool}
	def := &Route{Name: "fallback", Mode: ModeSplice, Pool: pool}
	tab, err := NewTable([]*Route{exact, wild, def}, "fallback")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, sni string
		want      *Route
	}{
		{name: "one valid label", sni: "eu." + registryName, want: wild},
		{name: "trailing dot is ignored", sni: "eu." + registryName + ".", want: wild},
		{name: "exact beats wildcard", sni: registryName, want: exact},
		{name: "an unknown valid name takes the default", sni: "other.test", want: def},
		{name: "empty first label", sni: "." + registryName},
		{name: "the wildcard pattern itself", sni: "*." + registryName},
		{name: "300-byte label", sni: strings.Repeat("a", 300) + "." + registryName},
		{name: "name over 253 bytes", sni: strings.Repeat("a.", 120) + registryName},
		{name: "leading hyphen", sni: "-eu." + registryName},
		{name: "two trailing dots", sni: "eu." + registryName + ".."},
		{name: "IP address", sni: "192.0.2.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tab.Lookup(tt.sni)
			if got != tt.want || ok != (tt.want != nil) {
				t.Errorf("Lookup(%.40q) = %v, %v; want %v", tt.sni, routeName(got), ok, routeName(tt.want))
			}
		})
	}
}

// dialCounter is a Config.DialContext that counts upstream dials.
type dialCounter struct{ n atomic.Int32 }

func (d *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.n.Add(1)
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// TestServerRefusesInvalidSNIBeforeDialing: an invalid server name gets
// unrecognized_name and a bad_sni line without an upstream dial, even
// with a wildcard route and a default route that would take it (before,
// "*.registry.example.com" and the others were dialed on the wildcard).
func TestServerRefusesInvalidSNIBeforeDialing(t *testing.T) {
	up := closedAddr(t) // a dial fails at once, and is counted
	var dials dialCounter
	w := newWorld(t, Config{DialContext: dials.dial}, "fallback",
		spliceRoute(t, "wild", []string{"*." + registryName}, up), spliceRoute(t, "fallback", nil, up))
	for _, sni := range []string{
		"*." + registryName,
		"." + registryName,
		strings.Repeat("a", 300) + "." + registryName,
		strings.Repeat("a.", 120) + registryName,
		"-eu." + registryName,
	} {
		t.Run(sni[:min(len(sni), 30)], func(t *testing.T) {
			c := w.dial(t)
			tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			if err := tc.Handshake(); err == nil || !strings.Contains(err.Error(), "unrecognized name") {
				t.Errorf("handshake error %v, want the unrecognized_name alert", err)
			}
			w.logs.wait(t, "msg=connection", "client="+c.LocalAddr().String(), "result=bad_sni")
		})
	}
	w.logs.wait(t, "level=WARN", "not a valid DNS host name; refused before routing")
	if n := dials.n.Load(); n != 0 {
		t.Errorf("%d upstream dials for invalid server names, want none", n)
	}
	if n := w.counter(t, w.m.connections, w.addr, "", "bad_sni"); n != 5 {
		t.Errorf("connections{result=bad_sni} = %v, want 5", n)
	}
}

// trailingDotHello is a real crypto/tls ClientHello whose server name is
// name with a trailing dot. crypto/tls's client drops a trailing dot, so
// the hello is captured for name+"x" and the "x" overwritten: the lengths
// stay right.
func trailingDotHello(t *testing.T, cfg *tls.Config, name string) []byte {
	t.Helper()
	cfg = cfg.Clone()
	cfg.ServerName = name + "x"
	raw := captureHello(t, cfg)
	if bytes.Count(raw, []byte(name+"x")) != 1 {
		t.Fatalf("the captured hello does not carry %q once", name+"x")
	}
	return bytes.Replace(raw, []byte(name+"x"), []byte(name+"."), 1)
}

// TestSpliceTrailingDotSNIPassesThrough: "registry.example.com." matches
// the route "registry.example.com" and its bytes reach the upstream as
// sent. Before, the ClientHello was refused as malformed (bad_hello),
// although the contract says a trailing dot is ignored.
func TestSpliceTrailingDotSNIPassesThrough(t *testing.T) {
	got := make(chan string, 1)
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		hello, _, err := ReadClientHello(c, nil)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- hello.ServerName
		c.Write([]byte("ok"))
		io.Copy(io.Discard, c)
	})
	w := newWorld(t, Config{}, "", registryRoute(t, up.addr))
	c := w.dial(t)
	c.Write(trailingDotHello(t, &tls.Config{}, registryName))
	b := make([]byte, 2)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ok" {
		t.Fatalf("got %q, %v through the splice route; want the upstream's ok", b, err)
	}
	if sni := <-got; sni != registryName+"." {
		t.Errorf("the upstream saw server name %q, want %q as the client sent it", sni, registryName+".")
	}
	c.Close()
	w.logs.wait(t, "msg=connection", "sni="+registryName+". ", "route=registry", "result=ok")
}

// TestBridgeRefusesTrailingDotSNI: on a bridge route a server name with a
// trailing dot gets an unrecognized_name alert and a Warn line that says
// what to change, and costs no upstream dial. Before, the hello was
// refused as malformed with no hint (and, once the parser accepted it,
// crypto/tls would have failed the handshake after the upstream dial).
func TestBridgeRefusesTrailingDotSNI(t *testing.T) {
	p := newBridgePKI(t)
	up := newTLSUpstream(t, p.upstreamConfig("http/1.1"))
	var dials dialCounter
	w := newWorld(t, Config{DialContext: dials.dial}, "", p.route(t, up.addr))
	c := w.dial(t)
	c.Write(trailingDotHello(t, p.nodeConfig("http/1.1"), registryName))
	reply := readAll(t, c)
	if want := alertRecord(tls.VersionTLS10, alertUnrecognizedName); !bytes.Equal(reply, want) {
		t.Errorf("client got %x, want the unrecognized_name alert %x", reply, want)
	}
	w.logs.wait(t, "level=WARN", "server name with a trailing dot to a bridge route", "https://"+registryName+"/", "route=registry")
	w.logs.wait(t, "msg=connection", "sni="+registryName+". ", "route=registry", "mode=bridge", "result=bad_sni")
	if n := dials.n.Load(); n != 0 {
		t.Errorf("%d upstream dials for a refused trailing-dot name, want none", n)
	}
	if _, err := ping(t, w, p.nodeConfig("http/1.1")); err != nil {
		t.Errorf("the same route without the dot: %v", err)
	}
}
