package httpbridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/snigate/snigate/oci"
)

// TestBlobMountFromOutsideTheAllowListRefused: on a route that allows
// POST to team/*, a cross-repository mount of a blob from a repository
// outside the allow-list (secret/x) gets 403 and never reaches the
// registry (the blob stays unreadable as team/app), however the from is
// spelled; a mount that names no source is refused too; each refusal's
// audit record names the source. A mount from an allowed repository
// still works. Against docker-registry, which implements mounts.
func TestBlobMountFromOutsideTheAllowListRefused(t *testing.T) {
	p := newTestPKI(t)
	reg := startDistribution(t, p)
	secret := reg.pushBlob(t, "secret/x", []byte("the secret layer"))
	shared := reg.pushBlob(t, "team/base", []byte("a shared layer"))
	w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{
		Methods: []string{"GET", "HEAD", "POST", "PUT", "PATCH"}, Repositories: []string{"team/*"},
	}})
	node := w.node(t, "h2")
	// Each case's refusal from its own client address: a client's
	// repeated refusals are aggregated in the audit log.
	tests := []struct {
		name, query, from, msg string
	}{
		{name: "from outside the allow-list", query: "mount=" + secret + "&from=secret/x", from: "secret/x", msg: `repository "secret/x" (the from of a blob mount`},
		{name: "from percent-encoded", query: "mount=" + secret + "&from=secret%2Fx", from: "secret/x", msg: `repository "secret/x"`},
		{name: "from in upper case", query: "mount=" + secret + "&FROM=secret/x", from: "secret/x", msg: `repository "secret/x"`},
		{name: "from repeated", query: "mount=" + secret + "&from=team/base&from=secret/x", msg: "names none of them"},
		{name: "from malformed", query: "mount=" + secret + "&from=secret/../x", msg: "names none of them"},
		{name: "no from", query: "mount=" + secret, msg: "names no repository to mount from"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, w.nodeFrom(t, "h2", fmt.Sprintf("127.0.0.%d", 10+i)), "POST", "/v2/team/app/blobs/uploads/?"+tt.query, nil)
			var eb oci.ErrorBody
			if resp.StatusCode != http.StatusForbidden || json.Unmarshal([]byte(body), &eb) != nil || len(eb.Errors) != 1 ||
				eb.Errors[0].Code != "DENIED" || !strings.Contains(eb.Errors[0].Message, tt.msg) {
				t.Fatalf("status %d body %s, want 403 DENIED saying %q", resp.StatusCode, body, tt.msg)
			}
			if rec := w.audit.wait(t, i+1)[i]; rec.From != tt.from || rec.Status != 403 || rec.Upstream != "" {
				t.Errorf("audit %+v, want from %q, status 403, no upstream", rec, tt.from)
			}
		})
	}
	if resp := reg.do(t, "HEAD", "/v2/team/app/blobs/"+secret, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the registry has the secret blob in team/app: HEAD %d, want 404", resp.StatusCode)
	}
	resp, body := do(t, node, "POST", "/v2/team/app/blobs/uploads/?mount="+shared+"&from=team/base", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("mount from team/base: %d %s, want 201", resp.StatusCode, body)
	}
	if rec := w.audit.wait(t, len(tests)+1)[len(tests)]; rec.From != "team/base" || rec.Digest != shared || rec.Status != 201 {
		t.Errorf("audit %+v, want from team/base, the mounted digest, 201", rec)
	}
	if resp, body := do(t, node, "GET", "/v2/team/app/blobs/"+shared, nil); resp.StatusCode != 200 || body != "a shared layer" {
		t.Errorf("GET the mounted blob: %d %q", resp.StatusCode, body)
	}
}
