package gateway

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/regcache"
)

// namedCacheYAML is cacheRouteYAML's route named name with its cache in
// dir, followed by extra (more routes).
func namedCacheYAML(name, dir, extra string) string {
	return `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: ` + name + `
    sni: ["registry.test"]
    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: {ca_cert: ca.crt, ca_key: ca.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http:
      cache: {dir: ` + dir + `, max_size: 1MiB}
` + extra
}

// auditRouteYAML is a second http route whose audit log is path.
func auditRouteYAML(path string) string {
	return `  - name: other
    sni: ["other.test"]
    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: {ca_cert: ca.crt, ca_key: ca.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http:
      audit_log: ` + path + `
`
}

// TestRejectedReloadLeavesTheRunningStores: a reload that renames the
// cache route onto its directory and is then rejected (another route's
// audit log names a directory) leaves the running generation's store open
// and its own: the build only records what the new routes need, and the
// directory changes hands only once the new generation is in force.
func TestRejectedReloadLeavesTheRunningStores(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	w := newWorld(t, namedCacheYAML("registry", dir, ""))
	w.start()
	before := w.g.cacheStore("registry", dir)
	if before == nil {
		t.Fatal("no store open at the start")
	}
	w.writeConfig(namedCacheYAML("renamed", dir, auditRouteYAML(w.dir)))
	err := w.g.Reload(t.Context(), "test")
	if err == nil || !strings.Contains(err.Error(), "routes[1].http.audit_log") {
		t.Fatalf("reload: %v, want it rejected at routes[1].http.audit_log", err)
	}
	if st := w.g.CacheStats(); len(st) != 1 || st[0].Route != "registry" || w.g.cacheStore("registry", dir) != before {
		t.Fatalf("after the rejected reload: %+v; want the running route's store, open", st)
	}
	if _, err := regcache.Open(regcache.Config{Dir: dir, MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)}); err == nil {
		t.Fatal("the running route's directory is not locked any more: its store was closed")
	}
	w.writeConfig(namedCacheYAML("renamed", dir, ""))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatalf("reload renaming the route: %v", err)
	}
	if st := w.g.CacheStats(); len(st) != 1 || st[0].Route != "renamed" || st[0].Unavailable != "" {
		t.Fatalf("after the rename: %+v; want the renamed route's store on the directory", st)
	}
}

// TestReloadRejectsALockedCacheDir: a new cache.dir another store holds
// (another process) rejects the reload at routes[0].http.cache.dir with
// its line, and the running store stays in force.
func TestReloadRejectsALockedCacheDir(t *testing.T) {
	dir, held := filepath.Join(t.TempDir(), "cache"), t.TempDir()
	w := newWorld(t, namedCacheYAML("registry", dir, ""))
	w.start()
	before := w.g.cacheStore("registry", dir)
	other, err := regcache.Open(regcache.Config{Route: "other", Dir: held, MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	defer other.Close()
	w.writeConfig(namedCacheYAML("registry", held, ""))
	err = w.g.Reload(t.Context(), "test")
	if err == nil || !strings.Contains(err.Error(), "snigate.yaml:11: routes[0].http.cache.dir: ") {
		t.Fatalf("reload: %v, want snigate.yaml:11: routes[0].http.cache.dir", err)
	}
	if w.g.cacheStore("registry", dir) != before {
		t.Fatal("the running store is not in force after the rejected reload")
	}
}

// TestUpgradeWaitsForTheOldLock: a process started by an upgrade opens
// its stores while the old process holds their directories: the store
// bypasses, the start goes on, and the store takes the directory over
// once the old process lets go.
func TestUpgradeWaitsForTheOldLock(t *testing.T) {
	dir := t.TempDir()
	old, err := regcache.Open(regcache.Config{Route: "registry", Dir: dir, MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	must(t, err)
	b := liveBuilder()
	b.open.(*liveOpener).wait = true
	gen := storeGen(b, cacheCfg(map[string]string{"registry": dir}))
	defer gen.retire()
	adopt(t, nil, gen)
	c := gen.store("registry").local
	if c == nil || c.Stats().Unavailable == "" {
		t.Fatalf("store %v: want one bypassing while the old process holds the directory", c)
	}
	must(t, old.Close())
	testkit.Poll(t, "the store takes the directory over", func() bool { return c.Stats().Unavailable == "" })
}

// TestCheckBuildsTheSharedTier: check builds the route's shared tier as
// run does (on the build's registry), opens no cache store, and
// --probe probes that tier.
func TestCheckBuildsTheSharedTier(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	ak, sk := filepath.Join(dir, "ak"), filepath.Join(dir, "sk")
	must(t, os.WriteFile(ak, []byte("a"), 0o600))
	must(t, os.WriteFile(sk, []byte("s"), 0o600))
	cacheDir := filepath.Join(dir, "cache")
	endpoint := "http://" + testnet.ClosedAddr(t)
	yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") +
		"    http:\n      cache:\n        dir: " + cacheDir + "\n        shared: {endpoint: \"" + endpoint +
		"\", bucket: snigate-cache, access_key_file: " + ak + ", secret_key_file: " + sk + "}\n"
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(yaml), 0o644))
	built, _, err := Validate(file, nil)
	must(t, err)
	defer built.Close()
	if _, ok := testkit.Gathered(t, built.g.registry, "snigate_cache_shared_requests_total", map[string]string{"route": "registry"}); !ok {
		t.Error("the build made no shared tier on its registry")
	}
	if st := built.g.CacheStats(); len(st) != 0 {
		t.Errorf("check opened stores: %+v", st)
	}
	if _, err := os.Stat(cacheDir); err == nil {
		t.Error("check created the cache directory")
	}
	var out bytes.Buffer
	_ = Probe(t.Context(), built, &out)
	if want := "registry: shared cache " + endpoint + " bucket snigate-cache: bucket FAILED"; !strings.Contains(out.String(), want) {
		t.Errorf("probe output lacks %q:\n%s", want, &out)
	}
}

// TestStoreSeriesFollowTheRoute: a route that moves its cache.dir keeps
// its snigate_cache_* series (the new store reports to them); a route
// that drops its cache loses them once the old store is closed; a
// rejected generation's new route leaves none behind.
func TestStoreSeriesFollowTheRoute(t *testing.T) {
	a, b2 := t.TempDir(), t.TempDir()
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	log := slog.New(slog.DiscardHandler)
	b := &builder{log: log, metrics: m, open: &liveOpener{log: log, http: m.http, cache: m.cache}}
	has := func(route string) bool {
		_, ok := testkit.Gathered(t, reg, "snigate_cache_bytes", map[string]string{"route": route})
		return ok
	}
	first := storeGen(b, cacheCfg(map[string]string{"r": a}))
	adopt(t, nil, first)
	moved := storeGen(b, cacheCfg(map[string]string{"r": b2}))
	adopt(t, first, moved)
	first.retire()
	if !has("r") {
		t.Fatal("the route lost its series when its cache.dir moved")
	}
	rejected := storeGen(b, cacheCfg(map[string]string{"r": b2, "new": t.TempDir()}))
	_, err := rejected.Adopt(moved)
	must(t, err)
	rejected.retire() // the reload fails after Adopt
	if has("new") || !has("r") {
		t.Fatalf("after a rejected reload: new %v, r %v; want only r's series", has("new"), has("r"))
	}
	none := storeGen(b, &config.Config{})
	adopt(t, moved, none)
	moved.retire()
	if has("r") {
		t.Fatal("the route's series stay after it dropped its cache")
	}
}
