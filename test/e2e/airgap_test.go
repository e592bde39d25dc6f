package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestCacheTagsOffline is issue 33's tags end to end: with offline and
// tags, an image pulled by tag through the cache route is pulled by tag
// again, by skopeo, ctr and a CRI pull (crictl), with both registries
// stopped (the manifest by
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
	t.Run("a CRI pull by tag with the registries stopped", func(t *testing.T) {
		w.criPull(t, ref)
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

// criPull pulls ref with crictl through the node's containerd (the CRI
// way the kubelet pulls); it skips the test without crictl.
func (w *world) criPull(t *testing.T, ref string) {
	t.Helper()
	crictl := func(args ...string) result {
		return runCmd(w.node.command(append([]string{"crictl", "--runtime-endpoint", "unix://" + w.ctrd.socket,
			"--image-endpoint", "unix://" + w.ctrd.socket, "--timeout", "60s"}, args...)...))
	}
	if _, err := exec.LookPath("crictl"); err != nil {
		t.Skip("no crictl")
	}
	defer crictl("rmi", ref)
	if r := crictl("pull", ref); r.err != nil {
		t.Fatalf("CRI pull by tag offline:\n%s", r)
	}
}

// TestCacheExportImport is issue 33's disk path end to end: `snigate ctl
// cache warm` fills the cache (a progress bar in a terminal, checked
// under tmux; plain lines otherwise), `status` says complete, `export`
// writes an OCI layout (and refuses a non-empty directory without
// --force); then, on an empty cache with the registries stopped, a
// tampered copy of the layout is refused naming the blob with nothing
// imported, the layout itself is imported, `status` says complete and
// skopeo pulls the image by tag.
func TestCacheExportImport(t *testing.T) {
	w := getWorld(t)
	spec := w.spec
	spec.offline, spec.tags = true, "24h"
	spec.cacheDir = filepath.Join(t.TempDir(), "cache-warm")
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	ref := cacheHost + "/" + imageRepo + ":" + imageTag
	ctl := func(args ...string) result {
		return w.gw.snigate(append([]string{"ctl", "--admin", adminAddr, "cache"}, args...)...)
	}
	w.checkWarmBar(t, ref)
	if r := ctl("warm", ref); r.err != nil || !strings.Contains(r.out, "complete") {
		t.Fatalf("warm (plain lines):\n%s", r)
	}
	if r := ctl("status", ref); r.err != nil || !strings.Contains(r.out, "complete") || strings.Contains(r.out, "incomplete") {
		t.Fatalf("status after warm:\n%s", r)
	}
	disk := filepath.Join(t.TempDir(), "disk")
	if r := ctl("export", ref, "--out", disk); r.err != nil {
		t.Fatalf("export:\n%s", r)
	}
	if r := ctl("export", ref, "--out", disk); r.err == nil || !strings.Contains(r.String(), "--force") {
		t.Fatalf("export into a non-empty directory without --force:\n%s", r)
	}
	tampered := filepath.Join(t.TempDir(), "tampered")
	layer := copyLayoutTampered(t, disk, tampered, lastLayer(t, disk))

	spec.cacheDir = filepath.Join(t.TempDir(), "cache-empty") // an empty cache, no tags remembered
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.restoreRegistries(t) })
	w.regA.proc.kill()
	w.regB.proc.kill()
	if r := ctl("import", tampered); r.err == nil || !strings.Contains(r.String(), layer) || !strings.Contains(r.String(), "nothing imported") {
		t.Fatalf("import of a tampered layout:\n%s", r)
	}
	if r := ctl("status", ref); r.err == nil {
		t.Fatalf("status after a refused import says complete:\n%s", r)
	}
	if r := ctl("import", disk); r.err != nil {
		t.Fatalf("import:\n%s", r)
	}
	if r := ctl("status", ref); r.err != nil || strings.Contains(r.out, "incomplete") {
		t.Fatalf("status after import, registries stopped:\n%s", r)
	}
	dest := filepath.Join(t.TempDir(), "pulled")
	if r := runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts, "docker://"+ref, "oci:"+dest+":"+imageTag)); r.err != nil {
		t.Fatalf("pull by tag of the imported image, registries stopped:\n%s", r)
	}
	if got, err := ociIndexDigest(dest, imageTag); err != nil || got != w.image.digest.String() {
		t.Fatalf("pulled %s (%v), pushed %s", got, err, w.image.digest)
	}
}

// lastLayer is the last layer of the image of the OCI layout in dir.
func lastLayer(t *testing.T, dir string) string {
	t.Helper()
	read := func(digest string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err == nil {
		err = json.Unmarshal(b, &idx)
	}
	if err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("the exported index.json: %s (%v)", b, err)
	}
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.Unmarshal(read(idx.Manifests[0].Digest), &m); err != nil || len(m.Layers) == 0 {
		t.Fatalf("the exported manifest: %v", err)
	}
	return m.Layers[len(m.Layers)-1].Digest
}

// copyLayoutTampered copies the layout src to dst with one byte of
// blob digest changed, and returns the digest.
func copyLayoutTampered(t *testing.T, src, dst, digest string) string {
	t.Helper()
	if r := runCmd(exec.Command("cp", "-a", src, dst)); r.err != nil {
		t.Fatal(r)
	}
	path := filepath.Join(dst, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return digest
}

// checkWarmBar runs `snigate ctl cache warm ref` in a tmux terminal and
// checks its progress bar (layers, bytes, rate) in the pane.
func (w *world) checkWarmBar(t *testing.T, ref string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("no tmux: the progress bar is not checked in a terminal")
		return
	}
	session := fmt.Sprintf("sgE2E-warm-%d", os.Getpid())
	argv := w.gw.ns.command(w.gw.bin, "ctl", "--admin", adminAddr, "cache", "warm", ref).Args
	shell := strings.Join(argv, " ") + "; echo EXIT=$?; sleep 600"
	if r := runCmd(exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "20", shell)); r.err != nil {
		t.Fatalf("tmux:\n%s", r)
	}
	defer runCmd(exec.Command("tmux", "kill-session", "-t", session))
	var pane string
	err := poll(startTries, pollStep, func() error {
		r := runCmd(exec.Command("tmux", "capture-pane", "-p", "-t", session))
		pane = r.out
		if !strings.Contains(pane, "EXIT=") {
			return fmt.Errorf("warm still running:\n%s", pane)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := imageLayers + 1 // and the config
	bar := regexp.MustCompile(`\[#+\] ` + strconv.Itoa(n) + `/` + strconv.Itoa(n) + ` layers \S+/\S+ \S+/s`)
	t.Logf("ctl cache warm in tmux:\n%s", strings.TrimSpace(pane))
	if !strings.Contains(pane, "EXIT=0") || !bar.MatchString(pane) {
		t.Fatalf("warm in a terminal: no complete progress bar (layers, bytes, rate) or a failure:\n%s", pane)
	}
}

// TestCachePinSurvivesMaxSize: an image in cache.pin is fetched when the
// configuration names it (logged, and `snigate ctl cache status` lists
// it complete and pinned), and stays complete when another image that
// fits in max_size alone, not beside it, is warmed: without the pin, the
// pinned image's content was evicted for it.
func TestCachePinSurvivesMaxSize(t *testing.T) {
	w := getWorld(t)
	w.pushSmallImage(t, "e2e/other", 30<<10) // fits in max_size alone, not beside the pinned image
	spec := w.spec
	spec.cacheDir = filepath.Join(t.TempDir(), "cache-pin")
	spec.maxSize, spec.pin = "40KiB", []string{imageRepo + ":" + imageTag} // the pinned image is 13 KiB
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	ctl := func(args ...string) result {
		return w.gw.snigate(append([]string{"ctl", "--admin", adminAddr, "cache"}, args...)...)
	}
	err := poll(startTries, pollStep, func() error {
		found := false
		_ = w.gw.logEvents(func(e logEvent) { found = found || e.Msg == "pinned image complete in the cache" })
		if !found {
			return fmt.Errorf("no log line %q", "pinned image complete in the cache")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := ctl("status"); r.err != nil || !strings.Contains(r.out, "complete (pinned)") {
		t.Fatalf("status of the pinned images:\n%s", r)
	}
	r := ctl("warm", cacheHost+"/e2e/other:1")
	t.Logf("warm of the other image (its layer does not fit beside the pinned image):\n%s", r)
	if r := ctl("status", cacheHost+"/"+imageRepo+":"+imageTag); r.err != nil || strings.Contains(r.out, "incomplete") {
		t.Fatalf("the pinned image after a larger one was warmed:\n%s", r)
	}
}

// pushSmallImage pushes an image of one random layer of size bytes as
// repo:1 to registry A and returns its digest.
func (w *world) pushSmallImage(t *testing.T, repo string, size int64) string {
	t.Helper()
	l, err := random.Layer(size, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := oneLayerImage(l)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "small-image")
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: "1"}))
	}
	if err != nil {
		t.Fatal(err)
	}
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", filepath.Join(w.dir, "certs-edge"),
		"oci:"+dir+":1", "docker://"+hostOf(registryAAddr)+"/"+repo+":1"))
	if r.err != nil {
		t.Fatalf("push: %s", r)
	}
	d, _ := img.Digest()
	return d.String()
}

// TestCacheRangeOfColdBlob: a Range of a 100 MiB blob the cache does not
// hold is answered (206, the exact bytes) while the cache fills the whole
// blob beside it: the registries see the range and one whole GET, and
// the whole blob pulled after it costs no other GET. (That the range's
// bytes come before the fill ends is httpcache's
// TestRangeOfColdBlobAnsweredAtOnce, with a registry that holds the
// fill's body.)
func TestCacheRangeOfColdBlob(t *testing.T) {
	w := getWorld(t)
	content := make([]byte, cacheLayerBytes)
	if _, err := rand.Read(content); err != nil {
		t.Fatal(err)
	}
	d := w.uploadBlob(t, "e2e/cold", content)
	uri := "/v2/e2e/cold/blobs/" + d
	n := len(content)
	status, body, _, err := w.cacheRequest(t, http.MethodGet, uri, map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", n-4096, n-1)})
	if err != nil || status != http.StatusPartialContent || !bytes.Equal(body, content[n-4096:]) {
		t.Fatalf("Range of the cold blob's last 4 KiB: %d, %d bytes (%v); want 206 and those bytes", status, len(body), err)
	}
	w.waitRegistryRequests(t, http.MethodGet, uri, 2) // the range and the fill
	status, body, _, err = w.cacheRequest(t, http.MethodGet, uri, nil)
	if err != nil || status != http.StatusOK || !bytes.Equal(body, content) {
		t.Fatalf("the whole blob after the range: %d, %d bytes (%v)", status, len(body), err)
	}
	if got := w.registryRequests(t, http.MethodGet, uri); got != 2 {
		t.Errorf("the registries logged %d GETs of the blob, want 2: the range and one whole fill", got)
	}
}
