package httpbridge

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snigate/snigate/oci"
)

// internalWorld is a registry whose blob GETs redirect to a target the
// test sets, and an internal service on 127.0.0.1 (the bastion's own
// admin port, say) that a redirect must not reach.
type internalWorld struct {
	*world
	target   atomic.Pointer[string] // the Location of blob redirects
	internal string                 // the internal service's host:port
	hits     atomic.Int32           // requests the internal service got
}

const internalSecret = "INTERNAL-SECRET"

func newInternalWorld(t *testing.T, cfg Config) *internalWorld {
	t.Helper()
	p := newTestPKI(t)
	iw := &internalWorld{}
	internal := startUpstream(t, &tls.Config{Certificates: []tls.Certificate{p.leaf(t, "internal", "127.0.0.1", "localhost", "storage.test")}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			iw.hits.Add(1)
			_, _ = w.Write([]byte(internalSecret))
		}))
	iw.internal = internal.addr
	up := startUpstream(t, p.upstreamTLS("h2"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") {
			http.Redirect(w, r, *iw.target.Load(), http.StatusTemporaryRedirect)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	cfg.RedirectRoots = p.ca.Pool()
	iw.world = newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: cfg})
	return iw
}

// blob GETs a blob, redirected to target.
func (iw *internalWorld) blob(t *testing.T, target string) (int, string) {
	t.Helper()
	iw.target.Store(&target)
	resp, body := do(t, iw.node(t, "h2"), "GET", "/v2/team/app/blobs/"+dgst, nil)
	return resp.StatusCode, body
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// ownAddress is a non-loopback address of this host's interfaces, "" if
// it has none.
func ownAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestRedirectToInternalAddressRefused: a registry's redirect to the
// gateway's loopback (by address or by a name resolving to it), a
// link-local address (cloud metadata) or the gateway's own interface
// address is not followed (the bug: the internal service's body went to
// the node, and the 502 texts told open ports from closed ones); the node
// gets the same generic 502 for each, the audit record, the log
// (rate-limited) and the metrics the facts,
// and the registry's other answers pass.
func TestRedirectToInternalAddressRefused(t *testing.T) {
	iw := newInternalWorld(t, Config{})
	_, port, _ := net.SplitHostPort(iw.internal)
	tests := []struct{ name, target, log string }{
		{name: "loopback service", target: "https://" + iw.internal + "/admin", log: "is a loopback address"},
		{name: "loopback closed port", target: "https://" + closedPort(t) + "/", log: "is a loopback address"},
		{name: "name resolving to loopback", target: "https://localhost:" + port + "/", log: "is a loopback address"},
		{name: "link-local metadata", target: "https://169.254.169.254/latest/meta-data/", log: "169.254.169.254 is a link-local address"},
		{name: "unspecified", target: "https://0.0.0.0:" + port + "/", log: "0.0.0.0 is an unspecified address"},
	}
	if own := ownAddress(); own != "" {
		tests = append(tests, struct{ name, target, log string }{name: "own address",
			target: "https://" + net.JoinHostPort(own, port) + "/", log: "is an address of the gateway itself"})
	}
	var first string
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body := iw.blob(t, tc.target)
			if status != http.StatusBadGateway || strings.Contains(body, internalSecret) || strings.Contains(body, "127.0.0.1") {
				t.Errorf("got %d %s, want 502 without the internal service's body or address", status, body)
			}
			if i == 0 {
				first = body
			} else if body != first {
				t.Errorf("body %q differs from the first case's %q: a node could tell the targets apart", body, first)
			}
			if rec := iw.audit.wait(t, i+1)[i]; rec.Status != http.StatusBadGateway || !strings.Contains(rec.Error, tc.log) {
				t.Errorf("audit record %+v, want 502 with the error saying %q", rec, tc.log)
			}
			if got := counter(t, iw.m.redirects.WithLabelValues("registry", RedirectRefused)); got != float64(i+1) {
				t.Errorf("redirects{refused} = %v, want %d", got, i+1)
			}
		})
	}
	iw.logs.Wait(t, "the registry's redirect was not followed", "is a loopback address") // rate-limited: the first
	if n := iw.hits.Load(); n != 0 {
		t.Errorf("the internal service got %d requests", n)
	}
	if resp, body := do(t, iw.node(t, "http/1.1"), "GET", "/v2/", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v2/ beside: %d %s", resp.StatusCode, body)
	}
}

// TestRedirectAllowList: with the target in RedirectAllow the redirect is
// followed; a closed port there is told to the node in the same words as
// a refused target.
func TestRedirectAllowList(t *testing.T) {
	iw := newInternalWorld(t, Config{RedirectAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if status, body := iw.blob(t, "https://"+iw.internal+"/blob"); status != http.StatusOK || body != internalSecret {
		t.Errorf("allowed target: %d %q, want 200 with its body", status, body)
	}
	_, closed := iw.blob(t, "https://"+closedPort(t)+"/")
	_, refused := iw.blob(t, "https://169.254.169.254/")
	if closed != refused || !strings.Contains(closed, oci.RedirectFailedMessage) {
		t.Errorf("closed port %q, refused target %q: want the same generic body", closed, refused)
	}
	iw.logs.Wait(t, "following the registry's redirect failed", "connection refused")
}

// TestRedirectGuardCustomDial: with a DialContext of the caller's (no
// Control hook), the connection's peer is checked once connected.
func TestRedirectGuardCustomDial(t *testing.T) {
	var iw *internalWorld
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == "storage.test:443" {
			addr = iw.internal
		}
		return new(net.Dialer).DialContext(ctx, network, addr)
	}
	iw = newInternalWorld(t, Config{DialContext: dial})
	if status, body := iw.blob(t, "https://storage.test/blob"); status != http.StatusBadGateway || strings.Contains(body, internalSecret) {
		t.Errorf("got %d %s, want 502 without the internal body", status, body)
	}
	iw.logs.Wait(t, "the registry's redirect was not followed", "is a loopback address")
	if n := iw.hits.Load(); n != 0 {
		t.Errorf("the internal service got %d requests", n)
	}
}

// TestRedirectGuardCheck covers the address classes.
func TestRedirectGuardCheck(t *testing.T) {
	own := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("192.0.2.2"), Mask: net.CIDRMask(24, 32)}}, nil
	}
	g := &redirectGuard{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, ownAddrs: own}
	tests := []struct {
		name, addr string
		refused    bool
	}{
		{name: "public", addr: "203.0.113.7"},
		{name: "private 10/8", addr: "10.20.0.5"},
		{name: "private ula", addr: "fd00::5"},
		{name: "own interface's neighbour", addr: "192.0.2.3"},
		{name: "allowed loopback", addr: "127.0.0.2"},
		{name: "loopback", addr: "127.0.0.1", refused: true},
		{name: "loopback v6", addr: "::1", refused: true},
		{name: "mapped loopback", addr: "::ffff:127.0.0.1", refused: true},
		{name: "link-local", addr: "169.254.169.254", refused: true},
		{name: "link-local v6", addr: "fe80::1", refused: true},
		{name: "unspecified", addr: "0.0.0.0", refused: true},
		{name: "this network", addr: "0.1.2.3", refused: true},
		{name: "unspecified v6", addr: "::", refused: true},
		{name: "multicast", addr: "224.0.0.251", refused: true},
		{name: "own address", addr: "192.0.2.2", refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := g.control("tcp", net.JoinHostPort(tc.addr, "443"), nil)
			if (err != nil) != tc.refused {
				t.Errorf("check(%s) = %v, want refused %v", tc.addr, err, tc.refused)
			}
		})
	}
}
