package httpbridge

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestHostileHTTP1Answers: an upstream that answers garbage, a status
// line and headers beyond MaxUpstreamHeaderBytes, a body shorter than its
// Content-Length, a chunked body cut off, endless 1xx answers, a 101, or
// a second answer nobody asked for costs the node that asked its answer
// (an error, or a cut body), never the gateway; the connection it came
// on is not used again, and a legitimate request on the same route is
// answered by the registry (on a new connection), however often the
// attack repeats.
func TestHostileHTTP1Answers(t *testing.T) {
	huge := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", MaxUpstreamHeaderBytes+1) + "\r\nContent-Length: 2\r\n\r\nok"
	tests := []struct {
		name   string
		answer string
		status int    // what the node gets, 0: any 5xx
		body   string // the body the node reads, with status
		cut    bool   // the node's answer may also end in an error before its headers (its gateway connection aborted)
		later  string // written after answer, in a write (a TLS record) of its own
	}{
		{name: "garbage", answer: "garbage\r\n\r\n"},
		{name: "huge header", answer: huge},
		{name: "body shorter than its length", answer: "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", status: 200, body: "short", cut: true},
		{name: "chunked body cut off", answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\ncut-", status: 200, body: "cut-", cut: true},
		{name: "endless 1xx", answer: strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 64) + okAnswer},
		{name: "101", answer: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: evil\r\nConnection: Upgrade\r\n\r\n"},
		{name: "a second answer unasked", answer: okAnswer + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil", status: 200, body: "ok"},
		{name: "a second answer unasked, later", answer: okAnswer, later: "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil", status: 200, body: "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			sent := make(chan struct{}, 1)
			reg := startRawRegistry(t, p, func(c net.Conn, r *http.Request) bool {
				if r.URL.Path == "/v2/team/app/manifests/attack" {
					_ = write(c, tc.answer)
					if tc.later != "" {
						_ = write(c, tc.later)
					}
					sent <- struct{}{}
					return tc.status == 200 && tc.body == "ok" // the unasked answer stays on a live connection
				}
				return write(c, okAnswer)
			})
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			node := w.node(t, "http/1.1")
			const rounds = 5
			for i := range rounds {
				node.CloseIdleConnections() // a node retries a GET cut on a reused connection
				status, body := getCut(t, node, "/v2/team/app/manifests/attack")
				<-sent // all of the attack is on its way to the gateway
				aborted := tc.cut && status == 0
				if !aborted && (tc.status == 0 && status < 500 || tc.status != 0 && (status != tc.status || body != tc.body)) {
					t.Fatalf("round %d: the attack got %d %q to the node, want %d %q", i, status, body, tc.status, tc.body)
				}
				if resp, body := do(t, node, "GET", "/v2/", nil); resp.StatusCode != 200 || body != "ok" {
					t.Fatalf("round %d: the legitimate GET after the attack: %d %q, want the registry's 200 ok", i, resp.StatusCode, body)
				}
			}
			if got := reg.accepted(); got != 1+rounds {
				t.Errorf("the registry accepted %d connections, want %d: each attacked one closed, each legitimate one reused", got, 1+rounds)
			}
		})
	}
}

// getCut is a GET whose body may end early: the status and what of the
// body came; 0 when no answer came.
func getCut(tb testing.TB, c *http.Client, path string) (int, string) {
	tb.Helper()
	resp, err := c.Get("https://" + registryName + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
