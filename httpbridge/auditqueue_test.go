package httpbridge

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// TestAuditLinesInOrderFlushedOnClose: N requests on one node connection
// give N audit lines in the order the requests were answered, each whole,
// all written by the time the log's Close returns (the writer encodes
// off the request path; a clean stop loses nothing queued).
func TestAuditLinesInOrderFlushedOnClose(t *testing.T) {
	const n = 50
	p := newTestPKI(t)
	up := startUpstream(t, p.upstreamTLS("http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	node := w.node(t, "http/1.1")
	for i := range n {
		resp, err := node.Get(fmt.Sprintf("https://%s/v2/team/app/manifests/v%d", registryName, i))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	shutdownPromptly(t, w) // every request finished: its record queued
	if err := w.audit.log.Close(); err != nil {
		t.Fatal(err)
	}
	lines := w.audit.sink.lines() // no wait: Close wrote what was queued
	if len(lines) != n {
		t.Fatalf("%d audit lines after Close, want %d", len(lines), n)
	}
	conn := ""
	for i, text := range lines {
		l := parseAuditLine(t, text)
		if want := fmt.Sprintf("v%d", i); l.Reference != want {
			t.Errorf("line %d: reference %q, want %q (out of order)", i, l.Reference, want)
		}
		if l.Time == "" || l.Status != http.StatusOK {
			t.Errorf("line %d: time %q status %d", i, l.Time, l.Status)
		}
		if i == 0 {
			conn = l.Conn
		} else if l.Conn != conn || conn == "" {
			t.Errorf("line %d: conn %q, want the one connection's %q", i, l.Conn, conn)
		}
	}
}
