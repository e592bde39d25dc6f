package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheTagsOffline is issue 33's tags end to end: with offline and
// tags, an image pulled by tag through the cache route is pulled by tag
// again, by skopeo and ctr, with both registries stopped (the manifest by
// tag audited offline with the tag as reference); reloaded with a tags
// shorter than the tag's age, the pull is refused with a message saying
// the tag's last confirmation is too old.
func TestCacheTagsOffline(t *testing.T) {
	w := getWorld(t)
	spec := w.spec
	spec.offline, spec.tags = true, "24h"
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	ref := cacheHost + "/" + imageRepo + ":" + imageTag
	pull := func() result {
		return runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts, "docker://"+ref,
			"oci:"+filepath.Join(t.TempDir(), "img")+":"+imageTag))
	}
	if r := pull(); r.err != nil {
		t.Fatalf("pull by tag with the registries up:\n%s", r)
	}
	t.Cleanup(func() { w.restoreRegistries(t) })
	w.regA.proc.kill()
	w.regB.proc.kill()

	t.Run("skopeo pulls by tag with the registries stopped", func(t *testing.T) {
		if r := pull(); r.err != nil {
			t.Fatalf("pull by tag offline:\n%s", r)
		}
		w.waitAudit(t, func(r auditRecord) bool {
			return r.Route == "cache" && r.Kind == "manifest" && r.Reference == imageTag && r.Cache == "offline" &&
				r.Status == http.StatusOK && r.Digest == w.image.digest.String()
		})
	})
	t.Run("ctr pulls by tag with the registries stopped", func(t *testing.T) {
		runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
		defer runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
		if r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref)); r.err != nil {
			t.Fatalf("ctr pull by tag offline:\n%s", r)
		}
		if got, err := w.ctrd.imageDigest(w.node, ref); err != nil || got != w.image.digest.String() {
			t.Fatalf("ctr pulled %s (%v), pushed %s", got, err, w.image.digest)
		}
	})
	t.Run("a tag older than tags is refused with a message", func(t *testing.T) {
		old := spec
		old.tags = "1ms"
		w.reloadGateway(t, old)
		r := pull()
		if r.err == nil {
			t.Fatalf("pull of a tag confirmed longer ago than tags succeeded:\n%s", r)
		}
		status, body, _, err := w.cacheRequest(t, http.MethodGet, "/v2/"+imageRepo+"/manifests/"+imageTag, nil)
		if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(string(body), "last confirmed by the registry") {
			t.Errorf("a tag older than tags: %d %s (%v); want 503 saying its last confirmation is too old", status, body, err)
		}
	})
}
