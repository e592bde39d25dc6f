package httpbridge

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/snigate/snigate/oci"
)

// askFirst is a link for the tests: it sends a HEAD of its own for the
// request's path through the upstream it was given (the node's headers
// copied), reports "hit" in the annotation with the parsed path's kind,
// then hands the request to next.
func askFirst(calls *atomic.Int32) Chain {
	return func(next http.Handler, upstream http.RoundTripper) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			out, err := http.NewRequestWithContext(r.Context(), http.MethodHead, "https://"+r.Host+r.URL.Path, nil)
			if err != nil {
				panic(err)
			}
			out.Host, out.Header = r.Host, r.Header.Clone()
			resp, err := upstream.RoundTrip(out)
			if err != nil {
				oci.AnnotationFrom(r.Context()).Fail(err, false)
				oci.WriteError(w, oci.UpstreamStatus(err), oci.CodeUnavailable, oci.NodeMessage(err))
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			oci.AnnotationFrom(r.Context()).SetCache("hit:" + string(oci.RequestAPI(r).Kind))
			next.ServeHTTP(w, r)
		})
	}
}

// TestChainLinkBetweenPolicyAndProxy: a link of Config.Chain gets only
// the requests the policy admitted, reads their parsed path, reaches the
// registry through the upstream it is given with the bridge's forwarding
// headers (the node's own dropped, the gateway's set as
// routes[].http.forwarded says), and its facts reach the audit record.
func TestChainLinkBetweenPolicyAndProxy(t *testing.T) {
	spoof := http.Header{"Authorization": {"Bearer node-token"}, "X-Forwarded-For": {"6.6.6.6"}, "X-Real-Ip": {"6.6.6.6"}}
	for _, forwarded := range []bool{true, false} {
		t.Run(fmt.Sprintf("forwarded=%v", forwarded), func(t *testing.T) {
			p := newTestPKI(t)
			up, seen := echoUpstream(t, p)
			var calls atomic.Int32
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{
				Forwarded: forwarded, Repositories: []string{"team/*"}, Chain: askFirst(&calls)}})
			node := w.node(t, "h2")
			if resp, _ := do(t, node, "GET", "/v2/other/app/manifests/v1", spoof); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("a repository outside the allow-list: %d, want 403", resp.StatusCode)
			}
			if n := calls.Load(); n != 0 {
				t.Fatalf("the link saw %d refused requests, want none", n)
			}
			if resp, body := do(t, node, "GET", "/v2/team/app/manifests/v1", spoof); resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("admitted request: %d %q", resp.StatusCode, body)
			}
			reqs := seen.all()
			if len(reqs) != 2 || reqs[0].Method != http.MethodHead || reqs[1].Method != http.MethodGet {
				t.Fatalf("registry saw %d requests, want the link's HEAD then the proxy's GET", len(reqs))
			}
			for _, r := range reqs {
				for k, v := range r.Header {
					if strings.Contains(strings.Join(v, ","), "6.6.6.6") {
						t.Errorf("%s: registry saw the node's %s: %q", r.Method, k, v)
					}
				}
				if got := r.Header.Get("X-Forwarded-For"); forwarded != (got == "127.0.0.1") {
					t.Errorf("%s: registry saw X-Forwarded-For %q with forwarded=%v", r.Method, got, forwarded)
				}
			}
			rec := w.audit.wait(t, 2)[1]
			if rec.Cache != "hit:manifest" || rec.Upstream != up.addr || rec.Status != 200 {
				t.Errorf("audit %+v, want the link's cache word, the upstream, 200", rec)
			}
		})
	}
}
