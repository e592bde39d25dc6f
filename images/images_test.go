package images

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/snigate/snigate/oci"
)

func mustRef(t *testing.T, s string) oci.Reference {
	t.Helper()
	r, err := oci.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWarmFetchesEveryPlatform: Warm of a tag of an index fetches every
// platform's manifest, config and layers through the chain into the
// store, reporting progress up to every layer; a second Warm fetches no
// blob again.
func TestWarmFetchesEveryPlatform(t *testing.T) {
	w := newWorld(t, 1<<30)
	idx := w.pushIndex(t, "team/app", "v1", 2)
	var last Progress
	calls := 0
	st := Warm(t.Context(), w.rt, "registry.test/team/app:v1", mustRef(t, "team/app:v1"), WarmOptions{Progress: func(p Progress) { last, calls = p, calls+1 }})
	d, _ := idx.Digest()
	if !st.Complete || st.Error != "" || st.Digest != d.String() || st.Manifests != 3 || st.Blobs != 8 {
		t.Fatalf("Warm = %+v; want complete, index %s, 3 manifests, 8 blobs", st, d)
	}
	if last.LayersDone != 8 || last.Layers != 8 || last.BytesDone != last.Bytes || calls < 9 {
		t.Errorf("last progress %+v after %d calls; want 8 of 8 layers, every byte", last, calls)
	}
	blobGets := func() int {
		n := 0
		w.mu.Lock()
		defer w.mu.Unlock()
		for k, v := range w.gets {
			if strings.HasPrefix(k, "GET ") && strings.Contains(k, "/blobs/") {
				n += v
			}
		}
		return n
	}
	before := blobGets()
	if st := Warm(t.Context(), w.rt, "again", mustRef(t, "team/app:v1"), WarmOptions{}); !st.Complete {
		t.Fatalf("second Warm: %+v", st)
	}
	if n := blobGets(); n != before {
		t.Errorf("a second Warm made %d blob GETs, want none", n-before)
	}
}

// TestCheckSaysWhatIsMissing: Check reads the store only: complete after
// a warm, incomplete naming a purged layer, and the tag resolved from the
// cache's memory with the registry down.
func TestCheckSaysWhatIsMissing(t *testing.T) {
	w := newWorld(t, 1<<30)
	w.pushIndex(t, "team/app", "v1", 1)
	ref := mustRef(t, "team/app:v1")
	if st := Warm(t.Context(), w.rt, "app", ref, WarmOptions{}); !st.Complete {
		t.Fatalf("Warm: %+v", st)
	}
	st, plan := Check(t.Context(), w.rt, "app", ref, nil)
	if !st.Complete || plan == nil {
		t.Fatalf("Check after a warm: %+v", st)
	}
	gone := plan.Blobs[len(plan.Blobs)-1].Digest
	if _, err := w.store.Purge(gone); err != nil {
		t.Fatal(err)
	}
	w.stop()
	st, _ = Check(t.Context(), w.rt, "app", ref, nil)
	if st.Complete || !slices.Equal(st.Missing, []string{gone}) {
		t.Fatalf("Check with a layer purged, registry down: %+v; want incomplete, missing %s", st, gone)
	}
	st, _ = Check(t.Context(), w.rt, "other", mustRef(t, "team/app:v2"), nil)
	if st.Complete || !strings.Contains(st.Error, "remembers no digest") {
		t.Fatalf("Check of a tag never seen: %+v", st)
	}
}

// TestExportThenImportIntoAnEmptyCache: an image exported from one cache
// is imported into an empty one whose registry is gone; it is complete
// there and its tag answers offline (confirmed at the import).
func TestExportThenImportIntoAnEmptyCache(t *testing.T) {
	w := newWorld(t, 1<<30)
	idx := w.pushIndex(t, "team/app", "v1", 2)
	ref := mustRef(t, "team/app:v1")
	if st := Warm(t.Context(), w.rt, "app", ref, WarmOptions{}); !st.Complete {
		t.Fatalf("Warm: %+v", st)
	}
	dir := filepath.Join(t.TempDir(), "disk")
	res, err := Export(t.Context(), dir, false, []ExportItem{{Route: w.rt, Name: "registry.test/team/app:v1", Ref: ref}})
	if err != nil || res.Blobs != 11 {
		t.Fatalf("Export: %+v, %v; want 11 blobs (3 manifests, 8 blobs)", res, err)
	}
	if p, err := layout.FromPath(dir); err != nil {
		t.Fatalf("go-containerregistry does not read the layout: %v", err)
	} else if ii, err := p.ImageIndex(); err != nil {
		t.Fatal(err)
	} else if im, err := ii.IndexManifest(); err != nil || len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "registry.test/team/app:v1" {
		t.Fatalf("go-containerregistry reads the layout's index as %+v, %v", im, err)
	} else if child, err := ii.ImageIndex(im.Manifests[0].Digest); err != nil {
		t.Fatalf("go-containerregistry does not read the exported index: %v", err)
	} else if cm, err := child.IndexManifest(); err != nil || len(cm.Manifests) != 2 {
		t.Fatalf("the exported index: %+v, %v; want 2 images", cm, err)
	}
	if _, err := Export(t.Context(), dir, false, []ExportItem{{Route: w.rt, Name: "x", Ref: ref}}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("Export into a non-empty directory: %v, want ErrNotEmpty", err)
	}
	if _, err := Export(t.Context(), dir, true, []ExportItem{{Route: w.rt, Name: "registry.test/team/app:v1", Ref: ref}}); err != nil {
		t.Fatalf("Export --force: %v", err)
	}

	fresh := newWorld(t, 1<<30)
	fresh.stop()
	l, err := ReadLayout(t.Context(), dir)
	if err != nil || len(l.Images) != 1 || l.Images[0].Name != "registry.test/team/app:v1" {
		t.Fatalf("ReadLayout: %+v, %v", l, err)
	}
	now := time.Now()
	res, err = Import(t.Context(), l, []ImportItem{{Image: l.Images[0], Route: fresh.rt, Ref: ref}}, now)
	if err != nil || len(res.Images) != 1 || !res.Images[0].Complete {
		t.Fatalf("Import: %+v, %v", res, err)
	}
	d, _ := idx.Digest()
	if got, at, ok := fresh.rt.Store.LookupTag("team/app", "v1"); !ok || got != d.String() || !at.Equal(now) {
		t.Fatalf("tag after import: %s %s %v; want %s confirmed at the import", got, at, ok, d)
	}
	if _, body, _, err := fetchManifest(t.Context(), fresh.rt, "team/app", "v1", ""); err != nil || len(body) == 0 {
		t.Fatalf("the tag through the fresh cache with its registry gone: %v", err)
	}
	if st, _ := Check(t.Context(), fresh.rt, "app", ref, nil); !st.Complete {
		t.Fatalf("Check in the fresh cache: %+v", st)
	}
}

// TestImportRefusesATamperedLayout: a layout missing a blob, or with a
// blob whose bytes do not match its digest, is refused naming the
// digest, and nothing of it is imported.
func TestImportRefusesATamperedLayout(t *testing.T) {
	w := newWorld(t, 1<<30)
	w.pushIndex(t, "team/app", "v1", 1)
	ref := mustRef(t, "team/app:v1")
	if st := Warm(t.Context(), w.rt, "app", ref, WarmOptions{}); !st.Complete {
		t.Fatalf("Warm: %+v", st)
	}
	_, plan := Check(t.Context(), w.rt, "app", ref, nil)
	layer := plan.Blobs[len(plan.Blobs)-1].Digest
	child := plan.Manifests[1].Digest
	tests := []struct {
		name   string
		tamper func(dir string) error
		digest string
	}{
		{name: "layer missing", tamper: func(dir string) error { return os.Remove(blobPath(dir, layer)) }, digest: layer},
		{name: "layer changed", tamper: func(dir string) error { return flipByte(blobPath(dir, layer)) }, digest: layer},
		{name: "manifest changed", tamper: func(dir string) error { return flipByte(blobPath(dir, child)) }, digest: child},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "disk")
			if _, err := Export(t.Context(), dir, false, []ExportItem{{Route: w.rt, Name: "registry.test/team/app:v1", Ref: ref}}); err != nil {
				t.Fatal(err)
			}
			if err := tt.tamper(dir); err != nil {
				t.Fatal(err)
			}
			_, err := ReadLayout(t.Context(), dir)
			if err == nil || !strings.Contains(err.Error(), tt.digest) || !strings.Contains(err.Error(), "nothing imported") {
				t.Fatalf("ReadLayout of a tampered layout: %v; want a refusal naming %s", err, tt.digest)
			}
		})
	}
}

func flipByte(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0xff
	return os.WriteFile(path, b, 0o644)
}
