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
