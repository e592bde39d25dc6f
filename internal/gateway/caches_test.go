package gateway

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regcache"
)

func cacheCfg(routes map[string]string) *config.Config {
	cfg := &config.Config{}
	for name, dir := range routes {
		cfg.Routes = append(cfg.Routes, config.Route{Name: name, HTTP: &config.HTTP{Cache: &config.Cache{Dir: dir, MaxSize: 1 << 20}}})
	}
	return cfg
}

// storeGen is a generation of cfg's caches alone, as the builder records
// them (no route is built).
func storeGen(b *builder, cfg *config.Config) *generation {
	gen := newGeneration(cfg, b.open)
	for i := range cfg.Routes {
		if rc := &cfg.Routes[i]; rc.HTTP != nil && rc.HTTP.Cache != nil {
			gen.addStore(rc, b)
		}
	}
	return gen
}

// openStores are the figures of the stores open in gens, each once, by
// route name.
func openStores(gens ...*generation) []regcache.Stats {
	seen := map[*regcache.Cache]bool{}
	var out []regcache.Stats
	for _, gen := range gens {
		for _, s := range gen.storeList() {
			if s.local != nil && !s.closed && !s.localTaken && !seen[s.local] {
				seen[s.local] = true
				out = append(out, s.local.Stats())
			}
		}
	}
	return out
}

// TestCachesKeptAcrossReloads: a route that keeps its cache.dir keeps its
// open store (a second Open of the directory would be refused by its
// lock); max_size follows the configuration; a directory left, or a
// route removed, closes its store once the new generation is in force,
// and its directory can be opened again.
func TestCachesKeptAcrossReloads(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	bld := liveBuilder()
	firstGen := storeGen(bld, cacheCfg(map[string]string{"registry": a}))
	adopt(t, nil, firstGen)
	first := firstGen.store("registry").local
	grown := cacheCfg(map[string]string{"registry": a})
	grown.Routes[0].HTTP.Cache.MaxSize = 2 << 20
	againGen := storeGen(bld, grown)
	adopt(t, firstGen, againGen)
	firstGen.retire()
	again := againGen.store("registry").local
	if again != first {
		t.Fatal("a reload with the same cache.dir opened a new store")
	}
	if got := again.Stats().MaxSize; got != 2<<20 {
		t.Errorf("max_size %d after the reload, want %d", got, 2<<20)
	}
	movedGen := storeGen(bld, cacheCfg(map[string]string{"registry": b}))
	carry, err := movedGen.Adopt(againGen)
	must(t, err)
	if len(openStores(againGen, movedGen)) != 2 {
		t.Errorf("the old directory's store closed before the new generation is in force")
	}
	carry()
	againGen.retire()
	if st := openStores(againGen, movedGen); len(st) != 1 || st[0].Dir != b {
		t.Errorf("after retain: %+v, want only %s", st, b)
	}
	reopened, err := regcache.Open(regcache.Config{Dir: a, MaxSize: 1})
	if err != nil {
		t.Fatalf("the directory the route left is still locked: %v", err)
	}
	reopened.Close()
	movedGen.retire()
	if len(openStores(movedGen)) != 0 {
		t.Error("retain(nil) left stores open")
	}
}

// TestCachesRouteRenamed: a route renamed onto the same cache.dir gets
// the directory (its lock is one store's).
func TestCachesRouteRenamed(t *testing.T) {
	dir := t.TempDir()
	b := liveBuilder()
	prev := storeGen(b, cacheCfg(map[string]string{"old": dir}))
	adopt(t, nil, prev)
	gen := storeGen(b, cacheCfg(map[string]string{"new": dir}))
	adopt(t, prev, gen)
	prev.retire()
	defer gen.retire()
	c := gen.store("new").local
	if c == nil || c.Route() != "new" || len(openStores(prev, gen)) != 1 {
		t.Errorf("route %v, %d stores; want new, 1", c, len(openStores(prev, gen)))
	}
}

// TestCheckRefusesUnusableCacheDir: `check` names routes[i].http.cache.dir
// with its line when the directory cannot be used, and accepts one that
// does not exist yet under a writable parent.
func TestCheckRefusesUnusableCacheDir(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	file := filepath.Join(dir, "not-a-dir")
	must(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name, cacheDir, want string
	}{
		{name: "a file", cacheDir: file, want: "routes[0].http.cache.dir: cache directory " + file + ": " + file + " is not a directory"},
		{name: "below a file", cacheDir: filepath.Join(file, "cache"), want: "not a directory"},
		{name: "to be created", cacheDir: filepath.Join(dir, "new", "cache")},
		// Root passes access(2) there; run then bypassed the cache.
		{name: "under /proc", cacheDir: "/proc/snigate-cache", want: "routes[0].http.cache.dir: cache directory /proc/snigate-cache: /proc is "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") +
				"    http:\n      cache:\n        dir: " + tt.cacheDir + "\n"
			cfgFile := filepath.Join(dir, "snigate.yaml")
			must(t, os.WriteFile(cfgFile, []byte(yaml), 0o644))
			var out bytes.Buffer
			err := Check(t.Context(), cfgFile, false, &out)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("check: %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "snigate.yaml:13:")):
				t.Errorf("check: %v, want snigate.yaml:13: and %q", err, tt.want)
			}
			if _, statErr := os.Stat(filepath.Join(dir, "new")); statErr == nil {
				t.Error("check created the cache directory")
			}
		})
	}
}

// cacheRouteYAML is an http route with a cache in dir; maxSize "" leaves
// the route without http.cache.
func cacheRouteYAML(dir, maxSize string) string {
	cache := ""
	if maxSize != "" {
		cache = "\n      cache: {dir: " + dir + ", max_size: " + maxSize + "}"
	}
	return `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: ["127.0.0.1:1"]
    serve: {ca_cert: ca.crt, ca_key: ca.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http:
      forwarded: true` + cache + "\n"
}

// TestReloadKeepsCacheOpen: a reload that keeps the route's cache.dir
// keeps its store (a second Open would be refused by the directory's
// lock, and the reload with it) and applies max_size; a reload without
// http.cache closes it, releasing the directory.
func TestReloadKeepsCacheOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	w := newWorld(t, cacheRouteYAML(dir, "1MiB"))
	w.start()
	before := w.g.cacheStore("registry", dir)
	w.writeConfig(cacheRouteYAML(dir, "2MiB"))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatalf("reload with the same cache.dir: %v", err)
	}
	if st := w.g.CacheStats(); len(st) != 1 || st[0].MaxSize != 2<<20 || w.g.cacheStore("registry", dir) != before {
		t.Errorf("after the reload: %+v; want the same store with max_size 2MiB", st)
	}
	w.writeConfig(cacheRouteYAML(dir, ""))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatalf("reload without http.cache: %v", err)
	}
	if st := w.g.CacheStats(); len(st) != 0 {
		t.Errorf("after dropping http.cache: %+v, want no store", st)
	}
	c, err := regcache.Open(regcache.Config{Dir: dir, MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("the directory is still locked after the route dropped its cache: %v", err)
	}
	c.Close()
}

// cacheStore is route's open store in dir in the generation in force,
// nil when none.
func (g *Gateway) cacheStore(route, dir string) *regcache.Cache {
	if s := g.gen.Load().store(route); s.holds(dir) {
		return s.local
	}
	return nil
}
