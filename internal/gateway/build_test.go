package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/upstream"
)

// httpRouteYAML is checkPKI's bridge route with an http section: an
// audit log and a cache in dir, and listen.dns when dnsAddr is set.
func httpRouteYAML(dir, cacheDir, dnsAddr string) string {
	yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") +
		"    http:\n      audit_log: " + filepath.Join(dir, "audit.log") + "\n      cache:\n        dir: " + cacheDir + "\n"
	if dnsAddr != "" {
		yaml += "dns:\n  answer: [127.0.0.1]\n"
		yaml = "listen:\n  dns: \"" + dnsAddr + "\"\n" + yaml[len("listen:\n"):]
	}
	return yaml
}

func parseIn(t *testing.T, dir, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(filepath.Join(dir, "snigate.yaml"), []byte(yaml))
	must(t, err)
	return cfg
}

// liveBuilder is the builder New gives a gateway, on a registry of its
// own.
func liveBuilder() *builder {
	log := slog.New(slog.DiscardHandler)
	m := newMetrics(prometheus.NewRegistry())
	return &builder{log: log, metrics: m, open: &liveOpener{log: log, http: m.http, cache: m.cache}}
}

// adopt makes gen take over from prev (nil: gen is the first) as a
// reload does: Adopt, prev's workers stopped, the carry.
func adopt(t *testing.T, prev, gen *generation) {
	t.Helper()
	carry, err := gen.Adopt(prev)
	must(t, err)
	if prev != nil {
		prev.stop()
	}
	carry()
}

// TestBuildSideEffectsAreItsOpener: the same builder code makes the same
// generation for run and for check; only the opener differs: run's
// creates the audit log and the cache directory, check's neither.
func TestBuildSideEffectsAreItsOpener(t *testing.T) {
	tests := []struct {
		name     string
		builder  func() *builder
		wantOpen bool
	}{
		{name: "run", builder: liveBuilder, wantOpen: true},
		{name: "check", builder: func() *builder {
			discard := slog.New(slog.DiscardHandler)
			return &builder{log: discard, metrics: newMetrics(prometheus.NewRegistry()), open: dryOpener{}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			checkPKI(t, dir)
			cacheDir := filepath.Join(dir, "cache")
			b := tt.builder()
			gen, err := b.build(parseIn(t, dir, httpRouteYAML(dir, cacheDir, "")))
			must(t, err)
			defer gen.retire()
			adopt(t, nil, gen) // as Gateway.assemble: the first generation opens its stores
			if gen.pools["registry"] == nil || gen.bridges["registry"] == nil || gen.clients["registry"] == nil {
				t.Fatalf("pool %v, bridge %v, client side %v: want each built", gen.pools["registry"], gen.bridges["registry"], gen.clients["registry"])
			}
			for _, path := range []string{filepath.Join(dir, "audit.log"), cacheDir} {
				if _, err := os.Stat(path); (err == nil) != tt.wantOpen {
					t.Errorf("%s: stat %v, want opened %v", path, err, tt.wantOpen)
				}
			}
		})
	}
}

// TestAdoptCarriesWhatCrossesAReload: before Adopt the new generation has
// none of the old one's state; after it, the upstream's admin state, the
// same open store for a route that keeps its cache.dir, and the store of
// a directory the route left is closed.
func TestAdoptCarriesWhatCrossesAReload(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	b := liveBuilder()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	prev, err := b.build(parseIn(t, dir, httpRouteYAML(dir, first, "127.0.0.1:0")))
	must(t, err)
	defer prev.retire()
	adopt(t, nil, prev)
	must(t, prev.pools["registry"].SetState("127.0.0.1:1", upstream.StateMaint))
	gen, err := b.build(parseIn(t, dir, httpRouteYAML(dir, second, "127.0.0.1:0")))
	must(t, err)
	defer gen.retire()
	if got := gen.pools["registry"].Status()[0].State; got != upstream.StateReady {
		t.Errorf("state %s before Adopt, want ready", got)
	}
	carry, err := gen.Adopt(prev)
	must(t, err)
	if n := len(openStores(prev, gen)); n != 2 {
		t.Errorf("%d stores open before the carry, want both directories' (the old generation serves until the swap)", n)
	}
	prev.stop()
	carry()
	if got := gen.pools["registry"].Status()[0].State; got != upstream.StateMaint {
		t.Errorf("state %s after Adopt, want maint (set on the old generation)", got)
	}
	prev.retire()
	if st := openStores(prev, gen); len(st) != 1 || st[0].Dir != second {
		t.Errorf("stores after Adopt: %+v, want only %s", st, second)
	}
	if gen.dnsHandler() == nil {
		t.Error("no DNS handler with listen.dns")
	}
}

// TestDNSHandlerNilWithoutListenDNS: without listen.dns the DNS server
// gets a nil dns.Handler (it refuses), not a typed nil *Handler it would
// call.
func TestDNSHandlerNilWithoutListenDNS(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	b := liveBuilder()
	gen, err := b.build(parseIn(t, dir, httpRouteYAML(dir, filepath.Join(dir, "cache"), "")))
	must(t, err)
	defer gen.retire()
	if h := gen.dnsHandler(); h != nil {
		t.Errorf("dnsHandler() = %#v, want nil", h)
	}
}

// TestProbeGoesThroughTheBuild: check --probe requests GET /v2/ through
// the bridge Validate built (its metrics are on the build's registry),
// not through one made apart: the retry from the first dead upstream to
// the second is counted there.
func TestProbeGoesThroughTheBuild(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	yaml := fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: registry
    sni: [reg.test]
    mode: bridge
    upstreams: [%q, %q]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key}
    http: {}
`, testnet.ClosedAddr(t), testnet.ClosedAddr(t))
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(yaml), 0o644))
	built, _, err := Validate(file, nil)
	must(t, err)
	defer built.Close()
	var out bytes.Buffer
	if err := Probe(t.Context(), built, &out); !errors.Is(err, ErrProbeFailed) {
		t.Fatalf("Probe = %v, want ErrProbeFailed (every upstream is down)\n%s", err, &out)
	}
	if got, _ := testkit.Gathered(t, built.g.registry, "snigate_http_upstream_retries_total", nil); got != 1 {
		t.Errorf("snigate_http_upstream_retries_total %v in the build's registry, want 1\n%s", got, &out)
	}
}
