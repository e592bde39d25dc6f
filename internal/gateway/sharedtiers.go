package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/s3tier"
)

// tierConfig is s3tier's Config of a route's cache.shared.
func tierConfig(route string, sc *config.SharedCache, log *slog.Logger, m *s3tier.Metrics) s3tier.Config {
	return s3tier.Config{Route: route, Endpoint: sc.Endpoint, Bucket: sc.Bucket, Prefix: sc.Prefix,
		Region: sc.Region, AccessKeyFile: sc.AccessKeyFile, SecretKeyFile: sc.SecretKeyFile, CA: sc.CA,
		Logger: log, Metrics: m}
}

// sharedStats returns the figures of the generation's shared tiers, by
// route name.
func (gen *generation) sharedStats() []s3tier.Stats {
	out := []s3tier.Stats{}
	for _, s := range gen.storeList() {
		if s.tier != nil {
			out = append(out, s.tier.Stats())
		}
	}
	return out
}

// sharedTierError is a cache.shared the builders refuse (a key file or
// the CA unreadable); buildError reports it at routes[i].http.cache.shared.
type sharedTierError struct{ err error }

func (e *sharedTierError) Error() string { return e.err.Error() }
func (e *sharedTierError) Unwrap() error { return e.err }

// SharedCacheStats returns the figures of every route's shared tier (the
// admin API's GET /api/cache/shared).
func (g *Gateway) SharedCacheStats() []s3tier.Stats { return g.gen.Load().sharedStats() }

// probeSharedTiers checks each route's shared tier, the one the build
// made, as `check --probe` does: the bucket answers, and a probe object
// can be written, read and deleted; one line per route. It reports
// whether one failed.
func probeSharedTiers(ctx context.Context, gen *generation, w io.Writer) (failed bool) {
	for i := range gen.cfg.Routes {
		s := gen.store(gen.cfg.Routes[i].Name)
		if s == nil || s.tier == nil {
			continue
		}
		if !writeProbeSteps(w, s.route, s.cache.Shared, s.tier.Probe(ctx)) {
			failed = true
		}
	}
	return failed
}

// writeProbeSteps writes one route's probe line; false when a step failed.
func writeProbeSteps(w io.Writer, route string, sc *config.SharedCache, steps []s3tier.ProbeStep) bool {
	for _, s := range steps {
		if s.Err != nil {
			fmt.Fprintf(w, "%s: shared cache %s bucket %s: %s FAILED: %v (a gateway needs s3:ListBucket, s3:GetObject, s3:PutObject, s3:DeleteObject on the bucket and prefix)\n",
				route, sc.Endpoint, sc.Bucket, s.Step, s.Err)
			return false
		}
	}
	fmt.Fprintf(w, "%s: shared cache %s bucket %s prefix %q: reachable; put, get and delete allowed\n", route, sc.Endpoint, sc.Bucket, sc.Prefix)
	return true
}
