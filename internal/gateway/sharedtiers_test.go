package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/internal/weedtest"
)

// TestCheckProbeSharedTier: check --probe reports each route's shared
// tier: reachable with put, get and delete allowed on a real SeaweedFS,
// and the failing step (the bucket) for a bucket that does not exist.
func TestCheckProbeSharedTier(t *testing.T) {
	w := weedtest.Start(t)
	ak, sk := w.KeyFiles(t)
	dir := t.TempDir()
	ca, err := pki.NewAuthority("probe CA")
	must(t, err)
	must(t, ca.WriteCA(dir, "ca"))
	_, err = ca.WriteLeaf(dir, "edge", "edge.test")
	must(t, err)
	_, err = ca.WriteLeaf(dir, "serve", "a.test", "a.test", "b.test")
	must(t, err)
	route := func(name, bucket string) string {
		return fmt.Sprintf(`  - name: %s
    sni: ["%s.test"]
    mode: bridge
    upstreams: [%q]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
    http:
      cache:
        dir: %s
        shared: {endpoint: %q, bucket: %s, prefix: %s/, access_key_file: %s, secret_key_file: %s}
`, name, name, testnet.ClosedAddr(t), filepath.Join(dir, "cache-"+name), w.Endpoint(), bucket, name, ak, sk)
	}
	cfg := "listen:\n  tls: [\"127.0.0.1:0\"]\nroutes:\n" + route("a", weedtest.Bucket) + route("b", "no-such-bucket")
	file := filepath.Join(dir, "snigate.yaml")
	must(t, os.WriteFile(file, []byte(cfg), 0o644))

	var out bytes.Buffer
	err = Check(t.Context(), file, true, &out)
	if !errors.Is(err, ErrProbeFailed) {
		t.Errorf("Check = %v, want ErrProbeFailed", err)
	}
	text := out.String()
	for _, want := range []string{
		fmt.Sprintf("a: shared cache %s bucket %s prefix \"a/\": reachable; put, get and delete allowed", w.Endpoint(), weedtest.Bucket),
		fmt.Sprintf("b: shared cache %s bucket no-such-bucket: bucket FAILED: bucket \"no-such-bucket\" does not exist", w.Endpoint()),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestSharedTiersKeptAcrossReloads: a route keeps its tier while its
// cache.shared keys stay the same (a reload does not stop its uploads),
// gets a new one when they change, and loses it (and its series) when
// the route drops cache.shared.
func TestSharedTiersKeptAcrossReloads(t *testing.T) {
	dir := t.TempDir()
	ak, sk := filepath.Join(dir, "ak"), filepath.Join(dir, "sk")
	must(t, os.WriteFile(ak, []byte("a"), 0o600))
	must(t, os.WriteFile(sk, []byte("s"), 0o600))
	b := liveBuilder()
	sc := config.SharedCache{Endpoint: "http://127.0.0.1:1", Bucket: "snigate-cache", AccessKeyFile: ak, SecretKeyFile: sk}
	cfgWith := func(sc *config.SharedCache) *config.Config {
		return &config.Config{Routes: []config.Route{{Name: "r", HTTP: &config.HTTP{Cache: &config.Cache{Dir: dir, MaxSize: 1 << 20, Shared: sc}}}}}
	}
	firstGen := storeGen(b, cfgWith(&sc))
	adopt(t, nil, firstGen)
	againGen := storeGen(b, cfgWith(&sc))
	adopt(t, firstGen, againGen)
	firstGen.retire()
	first, again := firstGen.store("r").tier, againGen.store("r").tier
	if again != first {
		t.Fatal("the same keys gave a new tier")
	}
	if len(againGen.sharedStats()) != 1 {
		t.Fatalf("tiers after a reload with the same keys: %d, want 1", len(againGen.sharedStats()))
	}
	moved := sc
	moved.Prefix = "other/"
	movedGen := storeGen(b, cfgWith(&moved))
	adopt(t, againGen, movedGen)
	againGen.retire()
	if other := movedGen.store("r").tier; other == first {
		t.Fatal("another prefix kept the old tier")
	}
	if st := movedGen.sharedStats(); len(st) != 1 || st[0].Prefix != "other/" {
		t.Fatalf("tiers after the prefix changed: %+v", st)
	}
	droppedGen := storeGen(b, cfgWith(nil))
	adopt(t, movedGen, droppedGen)
	movedGen.retire()
	defer droppedGen.retire()
	if len(droppedGen.sharedStats()) != 0 {
		t.Fatal("a tier left open after the route dropped cache.shared")
	}
}
