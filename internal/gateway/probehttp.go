package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/upstream"
)

// probeHTTPRoutes requests GET /v2/ through the client each http route
// uses for traffic (the same builder, pool order, retries and redirects)
// and writes one line per route. It reports whether a route failed: no
// answer, or a status outside the route's expect_status (200 and 401 when
// its health check is not http).
func probeHTTPRoutes(ctx context.Context, cfg *config.Config, w io.Writer) (failed bool, err error) {
	discard := slog.New(slog.DiscardHandler)
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		if rc.HTTP == nil {
			continue
		}
		ct, _, err := clientTLS(rc, discard, nil)
		if err != nil {
			return false, fmt.Errorf("route %s: %w", rc.Name, err)
		}
		pool, err := upstream.New(upstream.Config{Route: rc.Name, Addrs: rc.Upstreams, Balance: upstream.Balance(rc.Balance),
			Check: upstreamCheck(rc.Health), Logger: discard})
		if err != nil {
			return false, fmt.Errorf("route %s: %w", rc.Name, err)
		}
		b, err := httpbridge.New(httpbridge.Config{Route: rc.Name, Upstreams: pool, UpstreamTLS: checkClientTLS(ct, rc),
			ConnectTimeout: cfg.Timeouts.Connect, Redirects: rc.HTTP.Redirects, RedirectRoots: redirectRoots(rc), RedirectAllow: rc.HTTP.RedirectAllow, Log: discard})
		if err != nil {
			return false, fmt.Errorf("route %s: %w", rc.Name, err)
		}
		status, header, err := b.Probe(ctx)
		b.Close()
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
	return failed, nil
}
