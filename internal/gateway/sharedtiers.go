package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/s3tier"
)

// sharedTiers are the open shared tiers of the routes with
// http.cache.shared, kept across reloads like the local stores (their
// uploads and leases in flight go on): one per route and configuration,
// closed when the configuration in force no longer has it.
type sharedTiers struct {
	log *slog.Logger
	m   *s3tier.Metrics

	mu   sync.Mutex
	open map[tierKey]*s3tier.Tier
}

// tierKey is a tier's route and configuration.
type tierKey struct {
	route string
	cfg   config.SharedCache
}

func newSharedTiers(log *slog.Logger, m *s3tier.Metrics) *sharedTiers {
	return &sharedTiers{log: log, m: m, open: map[tierKey]*s3tier.Tier{}}
}

// tierConfig is s3tier's Config of a route's cache.shared.
func tierConfig(route string, sc *config.SharedCache, log *slog.Logger, m *s3tier.Metrics) s3tier.Config {
	return s3tier.Config{Route: route, Endpoint: sc.Endpoint, Bucket: sc.Bucket, Prefix: sc.Prefix,
		Region: sc.Region, AccessKeyFile: sc.AccessKeyFile, SecretKeyFile: sc.SecretKeyFile, CA: sc.CA,
		Logger: log, Metrics: m}
}

// take returns route's tier for sc: the open one when the route had it,
// else a new one (which opens nothing until it is used).
func (ts *sharedTiers) take(route string, sc *config.SharedCache) (*s3tier.Tier, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := tierKey{route, *sc}
	if t := ts.open[k]; t != nil {
		return t, nil
	}
	t, err := s3tier.New(tierConfig(route, sc, ts.log, ts.m))
	if err != nil {
		return nil, &sharedTierError{err: err}
	}
	ts.open[k] = t
	return t, nil
}

// retain closes the tiers that cfg (the configuration in force, nil:
// none) does not have, and drops the series of routes left without one.
func (ts *sharedTiers) retain(cfg *config.Config) {
	want := map[tierKey]bool{}
	routes := map[string]bool{}
	if cfg != nil {
		for i := range cfg.Routes {
			rc := &cfg.Routes[i]
			if rc.HTTP != nil && rc.HTTP.Cache != nil && rc.HTTP.Cache.Shared != nil {
				want[tierKey{rc.Name, *rc.HTTP.Cache.Shared}], routes[rc.Name] = true, true
			}
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, t := range ts.open {
		if want[k] {
			continue
		}
		delete(ts.open, k)
		t.Close()
		if !routes[k.route] {
			ts.m.DeleteRoute(k.route)
		}
		ts.log.Info("shared cache tier closed", "route", k.route, "endpoint", k.cfg.Endpoint, "bucket", k.cfg.Bucket)
	}
}

// Stats returns the figures of every open tier, by route name.
func (ts *sharedTiers) Stats() []s3tier.Stats {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := make([]s3tier.Stats, 0, len(ts.open))
	for _, t := range ts.open {
		out = append(out, t.Stats())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route < out[j].Route })
	return out
}

// sharedTierError is a cache.shared the builders refuse (a key file or
// the CA unreadable); buildError reports it at routes[i].http.cache.shared.
type sharedTierError struct{ err error }

func (e *sharedTierError) Error() string { return e.err.Error() }
func (e *sharedTierError) Unwrap() error { return e.err }

func (o *liveOpener) openShared(route string, sc *config.SharedCache) (*s3tier.Tier, error) {
	return o.caches.shared.take(route, sc)
}

// openShared in check builds the tier (reading its files, sending
// nothing) to say what run would refuse, and opens nothing.
func (dryOpener) openShared(route string, sc *config.SharedCache) (*s3tier.Tier, error) {
	t, err := s3tier.New(tierConfig(route, sc, slog.New(slog.DiscardHandler), nil))
	if err != nil {
		return nil, &sharedTierError{err: err}
	}
	t.Close()
	return nil, nil
}

// SharedCacheStats returns the figures of every route's shared tier (the
// admin API's GET /api/cache/shared).
func (g *Gateway) SharedCacheStats() []s3tier.Stats { return g.caches.shared.Stats() }

// probeSharedTiers checks each route's shared tier as `check --probe`
// does: the bucket answers, and a probe object can be written, read and
// deleted; one line per route. It reports whether one failed.
func probeSharedTiers(ctx context.Context, cfg *config.Config, w io.Writer) (failed bool) {
	for i := range cfg.Routes {
		rc := &cfg.Routes[i]
		if rc.HTTP == nil || rc.HTTP.Cache == nil || rc.HTTP.Cache.Shared == nil {
			continue
		}
		sc := rc.HTTP.Cache.Shared
		t, err := s3tier.New(tierConfig(rc.Name, sc, slog.New(slog.DiscardHandler), nil))
		if err != nil {
			failed = true
			fmt.Fprintf(w, "%s: shared cache %s bucket %s FAILED: %v\n", rc.Name, sc.Endpoint, sc.Bucket, err)
			continue
		}
		if !writeProbeSteps(w, rc.Name, sc, t.Probe(ctx)) {
			failed = true
		}
		t.Close()
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
