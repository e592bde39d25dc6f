package images

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/snigate/snigate/oci"
)

// TestPinnedImageSurvivesASmallMaxSize: Run fetches the pinned image
// (every platform) and pins it, logging its progress; warming another
// image into a cache too small for both evicts the other image's content,
// never the pinned one's.
func TestPinnedImageSurvivesASmallMaxSize(t *testing.T) {
	w := newWorld(t, 40<<10) // random.Index(1024, 3, n): about 1 KiB a blob
	w.pushIndex(t, "team/base", "v1", 2)
	w.pushIndex(t, "team/other", "v1", 30)
	var logs bytes.Buffer
	p := &Pinner{Route: w.rt, Pins: []oci.Reference{mustRef(t, "team/base:v1")}, Store: w.store,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fetching a pinned image", "pinned image: blob in the cache", "pinned image complete in the cache"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no log line %q; log:\n%s", want, logs.String())
		}
	}
	other := Warm(t.Context(), w.rt, "other", mustRef(t, "team/other:v1"), WarmOptions{})
	if other.Complete {
		t.Fatalf("the other image fits in max_size: the test proves nothing (%+v)", other)
	}
	if st, _ := Check(t.Context(), w.rt, "base", mustRef(t, "team/base:v1"), nil); !st.Complete {
		t.Fatalf("the pinned image after a larger one was warmed: %+v", st)
	}
}

// TestPinsKeptAcrossARestartWithTheRegistryAway: after a restart (the
// store reopened, nothing pinned) with the registry away and no
// cache.tags, the Pinner still finds a pinned tag's image (the tag it
// fetched is remembered in the store) and pins it; and a round that
// cannot read an image keeps the pins it had. The bug: the tag was
// known only to cache.tags, so the image went unpinned and evictable
// while the site was cut off.
func TestPinsKeptAcrossARestartWithTheRegistryAway(t *testing.T) {
	w := newWorldTags(t, 1<<30, 0)
	w.pushIndex(t, "team/base", "v1", 1)
	pins := []oci.Reference{mustRef(t, "team/base:v1")}
	quiet := slog.New(slog.DiscardHandler)
	if err := (&Pinner{Route: w.rt, Pins: pins, Store: w.store, Log: quiet, Retry: -1}).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, plan := Check(t.Context(), w.rt, "base", pins[0], nil)
	if plan == nil {
		t.Fatal("not in the cache after the pin")
	}
	dir := w.store.Dir()
	w.store.Close()
	w.stop()
	reopened := openStore(t, dir, 1<<30)
	rt := w.route(reopened)
	if err := (&Pinner{Route: rt, Pins: pins, Store: reopened, Log: quiet, Retry: -1}).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Digests() {
		if !reopened.Pinned(d) {
			t.Fatalf("%s not pinned after a restart with the registry away", d)
		}
	}
	unknown := []oci.Reference{mustRef(t, "team/base:v1"), mustRef(t, "team/never:v1")}
	if err := (&Pinner{Route: rt, Pins: unknown, Store: reopened, Log: quiet, Retry: -1}).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !reopened.Pinned(plan.Digests()[0]) {
		t.Fatal("a round with an unreadable image dropped the pins")
	}
}
