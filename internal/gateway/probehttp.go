package gateway

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/upstream"
)

// probeHTTPRoutes requests GET /v2/ through the bridge the build made
// for each http route (its client: pool order, retries and redirects, as
// traffic) and writes one line per route. It reports whether a route
// failed: no answer, or a status outside the route's expect_status (200
// and 401 when its health check is not http).
func probeHTTPRoutes(ctx context.Context, gen *generation, w io.Writer) (failed bool) {
	for i := range gen.cfg.Routes {
		rc := &gen.cfg.Routes[i]
		b := gen.bridges[rc.Name]
		if b == nil {
			continue
		}
		status, header, err := b.Probe(ctx)
		want := upstream.DefaultExpectStatus()
		if rc.Health.Check == config.CheckHTTP {
			want = rc.Health.ExpectStatus
		}
		switch {
		case err != nil:
			failed = true
			fmt.Fprintf(w, "%s: http: GET /v2/ through the route's HTTP client FAILED: %v\n", rc.Name, err)
		case !slices.Contains(want, status):
			failed = true
			fmt.Fprintf(w, "%s: http: GET /v2/ through the route's HTTP client answered %d, want one of %v\n", rc.Name, status, want)
		default:
			line := fmt.Sprintf("%s: http: GET /v2/ through the route's HTTP client: %d", rc.Name, status)
			if c := header.Get("Www-Authenticate"); c != "" {
				line += " (" + c + ")"
			}
			fmt.Fprintln(w, line)
		}
	}
	return failed
}
