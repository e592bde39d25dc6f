package sni

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// HAProxy (the Debian package) as a real PROXY protocol peer: in front of
// snigate with send-proxy-v2, and behind a splice route with accept-proxy.

const haproxyBin = "/usr/sbin/haproxy"

// haproxy runs HAProxy in the foreground with frontend, a "frontend" and
// "backend" section body, listening on a socket the test opened (fd@3),
// so that no port is guessed and connections queue until it is ready.
// Its stdout and stderr go to logs. It is killed when the test ends.
func runHAProxy(tb testing.TB, frontend, backend string) (addr string, logs *logSink) {
	tb.Helper()
	if _, err := os.Stat(haproxyBin); err != nil {
		if os.Getenv("SNIGATE_REQUIRE_E2E") == "1" {
			tb.Fatalf("%s not found and SNIGATE_REQUIRE_E2E=1: install the haproxy package (test/deps.sh)", haproxyBin)
		}
		tb.Skipf("%s not found: install the haproxy package (test/deps.sh) to run the HAProxy interoperability tests", haproxyBin)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cfg := fmt.Sprintf(`global
    log stdout format raw local0
    nbthread 1
    maxconn 64
defaults
    mode tcp
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind fd@3%s
backend be
%s
`, frontend, backend)
	file := filepath.Join(tb.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	logs = newLogSink()
	cmd := exec.Command(haproxyBin, "-db", "-f", file)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if tb.Failed() {
			tb.Logf("haproxy config:\n%s\nhaproxy output:\n%s", cfg, logs)
		}
	})
	return ln.Addr().String(), logs
}

// tlsEcho is a TLS echo server for registryName and a client that
// trusts it.
func tlsEcho(tb testing.TB) (addr string, client *tls.Config) {
	ca := newPKI(tb, "echo CA")
	up := newTLSUpstream(tb, &tls.Config{Certificates: []tls.Certificate{ca.leaf(tb, registryName)}})
	return up.addr, &tls.Config{ServerName: registryName, RootCAs: ca.pool}
}

// pullFrom runs a TLS echo exchange with addr from local address from and
// returns the client's address.
func pullFrom(tb testing.TB, addr string, from net.IP, cfg *tls.Config) string {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from}, Timeout: waitLimit}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	tc := tls.Client(c, cfg)
	if _, err := tc.Write([]byte("through haproxy")); err != nil {
		tb.Fatalf("TLS through HAProxy and snigate: %v", err)
	}
	tc.CloseWrite()
	if got, err := io.ReadAll(tc); string(got) != "through haproxy" {
		tb.Fatalf("echo through HAProxy and snigate: %q, %v", got, err)
	}
	return c.LocalAddr().String()
}

// TestHAProxySendProxyV2InFront: HAProxy in front of snigate sends a PROXY
// v2 header; snigate (proxy_protocol_from 127.0.0.1/32, HAProxy's source)
// logs HAProxy's client, not HAProxy.
func TestHAProxySendProxyV2InFront(t *testing.T) {
	echoAddr, client := tlsEcho(t)
	w := newWorld(t, Config{
		ProxyProtocolFrom: prefixes("127.0.0.1/32"),
		Allow:             prefixes("127.0.0.2/32"), // the client behind HAProxy; HAProxy itself is not in it
	}, "", registryRoute(t, echoAddr))
	front, _ := runHAProxy(t, "\n    default_backend be", "    server snigate "+w.addr+" send-proxy-v2")
	from := pullFrom(t, front, net.IPv4(127, 0, 0, 2), client)
	w.logs.wait(t, "msg=connection", "client="+from, "route=registry", "result=ok")
}

// TestHAProxyAcceptProxyBehindSplice: a splice route with proxy_protocol
// v2 toward HAProxy (accept-proxy), which forwards to the TLS upstream and
// logs the client address it was given: the original client's.
func TestHAProxyAcceptProxyBehindSplice(t *testing.T) {
	echoAddr, client := tlsEcho(t)
	back, hlogs := runHAProxy(t, " accept-proxy\n    log-format \"haproxy-client=%ci:%cp\"\n    default_backend be", "    server echo "+echoAddr)
	r := registryRoute(t, back)
	r.ProxyProtocol = ProxyProtocolV2
	w := newWorld(t, Config{}, "", r)
	from := pullFrom(t, w.addr, net.IPv4(127, 0, 0, 3), client)
	w.logs.wait(t, "msg=connection", "client="+from, "upstream="+back, "result=ok")
	hlogs.wait(t, "haproxy-client="+from)
}
