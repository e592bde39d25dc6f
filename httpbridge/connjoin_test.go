package httpbridge

import (
	"context"
	"regexp"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/snigate/snigate/internal/memregistry"
)

var connLineRE = regexp.MustCompile(`upstream=(\S*) result=ok .* conn=(\S+)`)

// TestAuditJoinsConnectionLine: a pull on one node connection writes
// audit records that carry the `conn` of that connection's log line, and
// the line names the upstream its requests went to. Before, an http
// route's connection line had upstream="" and nothing joined the two
// logs.
func TestAuditJoinsConnectionLine(t *testing.T) {
	p := newTestPKI(t)
	up, seen, _ := newRegistry(t, p, "h2", "http/1.1")
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	node := w.node(t, "h2")
	if _, err := memregistry.PullImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), node.Transport); err != nil {
		t.Fatal(err)
	}
	recs := w.audit.wait(t, len(seen.all()))
	node.CloseIdleConnections()
	line := w.logs.Wait(t, "msg=connection", "route=registry", "result=ok")
	m := connLineRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("connection line %q: want upstream=... result=ok ... conn=...", line)
	}
	if m[1] != up.addr {
		t.Errorf("connection line upstream=%q, want %q (the upstream its requests used)", m[1], up.addr)
	}
	for _, rec := range recs {
		if rec.Conn != m[2] {
			t.Errorf("audit record %s %s: conn %q, want the connection line's %q", rec.Method, rec.Kind, rec.Conn, m[2])
		}
	}
}
