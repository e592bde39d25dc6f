package httpbridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// drainAt is a bridge eventFunc that drains the connection, as the
// gateway's drain does, exactly when it reaches at, then closes landed.
func drainAt(at connEvent, landed chan<- struct{}) func(*nodeConn, connEvent) {
	return func(nc *nodeConn, e connEvent) {
		if e == at {
			nc.drain("draining")
			close(landed)
		}
	}
}

// dialNode opens a node's TLS connection to the gateway offering proto,
// with a read deadline of waitLimit (a failure deadline).
func dialNode(t *testing.T, w *world, proto string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{proto}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	return c
}

// shutdownPromptly drains the gateway and fails when a connection holds
// the drain.
func shutdownPromptly(t *testing.T, w *world) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := w.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v (a connection held the drain)", err)
	}
}

// TestDrainAtAnyPointClosesIdleConnection: a drain that lands just before
// the bridge arms a connection's drain, just after, or as the node's
// first bytes arrive still closes a connection with no request promptly
// (HTTP/1.1: silent; HTTP/2: preface and SETTINGS, no stream), instead of
// holding the gateway's drain until a timeout.
func TestDrainAtAnyPointClosesIdleConnection(t *testing.T) {
	tests := []struct {
		name  string
		proto string
		at    connEvent
	}{
		{name: "http/1.1, before arming", proto: "http/1.1", at: evArming},
		{name: "http/1.1, just armed", proto: "http/1.1", at: evArmed},
		{name: "h2, before arming", proto: "h2", at: evArming},
		{name: "h2, just armed", proto: "h2", at: evArmed},
		{name: "h2, at the preface", proto: "h2", at: evHeard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, _ := echoUpstream(t, p)
			landed := make(chan struct{})
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, noFirstRequest: true,
				cfg: Config{ReadHeaderTimeout: time.Hour}, events: drainAt(tt.at, landed)})
			c := dialNode(t, w, tt.proto)
			if tt.proto == "h2" { // errors: the drain may have closed it already
				_, _ = io.WriteString(c, http2.ClientPreface)
				_ = http2.NewFramer(c, c).WriteSettings()
			}
			<-landed
			shutdownPromptly(t, w)
			if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Error("the connection is still open")
			} // else closed: EOF, or a reset for bytes it did not read

		})
	}
}

// TestDrainAnswersArrivingRequest: a drain that lands when the node's
// first request has begun to arrive, before the bridge has begun to serve
// it, lets the request finish: it is answered, with Connection: close.
func TestDrainAnswersArrivingRequest(t *testing.T) {
	p := newTestPKI(t)
	up, _ := echoUpstream(t, p)
	landed := make(chan struct{})
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, events: drainAt(evHeard, landed)})
	c := dialNode(t, w, "http/1.1")
	if _, err := io.WriteString(c, "GET /v2/ HTTP/1.1\r\nHost: "+registryName+"\r\n"); err != nil {
		t.Fatal(err)
	}
	<-landed
	if _, err := io.WriteString(c, "\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("the request in flight got no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("answer %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
}

// TestLateH2ConnectionClosesAfterAnswer: an HTTP/2 connection that comes
// to a bridge a reload already replaced gets its answer, then GOAWAY, and
// closes (its HTTP/1.1 counterpart is in TestCloseRetiresBridge).
func TestLateH2ConnectionClosesAfterAnswer(t *testing.T) {
	p := newTestPKI(t)
	up, _ := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	w.bridge.Close()
	if resp, _ := do(t, w.node(t, "h2"), "GET", "/v2/", nil); resp.StatusCode != 200 {
		t.Fatalf("late connection: %d, want 200", resp.StatusCode)
	}
	w.logs.Wait(t, "msg=connection", "result=ok")
}

// handTimers starts idle timers that only the test fires: each arming's
// function is sent on armed (buffered), and its timer never fires.
func handTimers(armed chan<- func()) func(time.Duration, func()) *time.Timer {
	return func(_ time.Duration, f func()) *time.Timer {
		armed <- f
		return time.AfterFunc(math.MaxInt64, func() {})
	}
}

// getOn sends GET /v2/ on the node connection c and reads the answer.
func getOn(t *testing.T, c io.Writer, br *bufio.Reader) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, "GET /v2/ HTTP/1.1\r\nHost: "+registryName+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer on the connection: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestStaleIdleFiringKeepsConnection: an idle timer that fires as a
// request begins, and gets to act only once that request has ended, does
// not end the connection as idle: the next request is answered on it and
// keeps it alive.
func TestStaleIdleFiringKeepsConnection(t *testing.T) {
	p := newTestPKI(t)
	up, _ := echoUpstream(t, p)
	armed := make(chan func(), 16)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, idleTimers: handTimers(armed)})
	c := dialNode(t, w, "http/1.1")
	br := bufio.NewReader(c)
	if resp := getOn(t, c, br); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first answer %d close=%v", resp.StatusCode, resp.Close)
	}
	stale := <-armed // armed as the connection began, before the first request
	stale()
	if resp := getOn(t, c, br); resp.StatusCode != 200 || resp.Close {
		t.Errorf("answer after the stale firing: %d close=%v, want 200 and the connection kept", resp.StatusCode, resp.Close)
	}
}
