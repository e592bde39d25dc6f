package images

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/snigate/snigate/oci"
)

// PinStore is a store whose content can be kept from eviction.
type PinStore interface {
	// AddPinned keeps digests from eviction.
	AddPinned(digests []string)
	// SetPinned replaces the digests kept from eviction.
	SetPinned(digests []string)
}

// Pinner keeps a route's pinned images (routes[].http.cache.pin) in its
// cache: Run fetches each (every platform) through the route's chain,
// pins everything it needs as it goes, and, once every image was tried,
// pins exactly those digests (content of images no longer pinned may be
// evicted again); when an image could not be read at all (the registry
// away and its tag unknown), the earlier pins stay too. An image the
// registry cannot give now is pinned as far as the cache holds it
// (Check); a tag it fetched is remembered in the store, so that Check
// finds it after a restart with the registry away. Progress goes to the
// log and to Progress.
type Pinner struct {
	Route Route
	Pins  []oci.Reference
	Store PinStore
	Log   *slog.Logger // nil: slog.Default()
	// Retry is how long Run waits before it tries again the images it
	// could not complete (no healthy upstream yet at start, the registry
	// away), doubling up to MaxPinRetry. Zero: DefaultPinRetry; negative:
	// Run returns after one round.
	Retry time.Duration

	mu       sync.Mutex
	progress map[string]Progress // by image, the last report of the run
	running  bool
}

// DefaultPinRetry and MaxPinRetry bound the waits between a Pinner's
// rounds while an image is incomplete.
const (
	DefaultPinRetry = 10 * time.Second
	MaxPinRetry     = 10 * time.Minute
)

// Run fetches and pins the images, trying again (Retry) while one is
// incomplete, and returns once all are complete (nil) or ctx ends.
func (p *Pinner) Run(ctx context.Context) error {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	p.setRunning(true)
	defer p.setRunning(false)
	wait := cmp.Or(p.Retry, DefaultPinRetry)
	for {
		if p.round(ctx, log) || p.Retry < 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Info("pinned images incomplete: trying again", "route", p.Route.Name, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, MaxPinRetry)
	}
}

// round tries every image once and pins what they need; it reports
// whether every image is complete.
func (p *Pinner) round(ctx context.Context, log *slog.Logger) bool {
	var all []string
	complete, resolved := true, true
	for _, ref := range p.Pins {
		digests, ok := p.pinOne(ctx, log, ref)
		if ctx.Err() != nil {
			return false // the pins stay as they were
		}
		all, complete, resolved = append(all, digests...), complete && ok, resolved && digests != nil
	}
	if resolved {
		p.Store.SetPinned(all) // else what an unreadable image had pinned stays pinned
	}
	return complete
}

// pinOne warms ref, pins what it needs and returns those digests; ok
// when the image is complete.
func (p *Pinner) pinOne(ctx context.Context, log *slog.Logger, ref oci.Reference) ([]string, bool) {
	name := ref.String()
	log.Info("fetching a pinned image into the cache", "route", p.Route.Name, "image", name)
	st := Warm(ctx, p.Route, name, ref, WarmOptions{Progress: func(pr Progress) { p.report(log, pr) }})
	cst, plan := Check(ctx, p.Route, name, ref, nil)
	if plan == nil {
		log.Warn("pinned image not in the cache: the registry cannot give it now", "route", p.Route.Name,
			"image", name, "err", firstNonEmpty(st.Error, cst.Error))
		return nil, false
	}
	digests := plan.Digests()
	p.Store.AddPinned(digests)
	if ref.Tag != "" && st.Error == "" && st.Digest != "" {
		// Check finds the tag after a restart with the registry away, with
		// or without cache.tags (which decides whether nodes get it).
		_ = p.Route.Store.RememberTag(ref.Repository, ref.Tag, st.Digest, time.Now())
	}
	if !cst.Complete {
		log.Warn("pinned image incomplete in the cache", "route", p.Route.Name, "image", name,
			"digest", cst.Digest, "missing", len(cst.Missing), "err", st.Error)
		return digests, false
	}
	log.Info("pinned image complete in the cache", "route", p.Route.Name, "image", name, "digest", cst.Digest,
		"blobs", cst.Blobs, "bytes", cst.Bytes)
	return digests, true
}

// report keeps pr and logs each blob that completes.
func (p *Pinner) report(log *slog.Logger, pr Progress) {
	p.mu.Lock()
	if p.progress == nil {
		p.progress = map[string]Progress{}
	}
	p.progress[pr.Image] = pr
	p.mu.Unlock()
	if pr.Blob != "" {
		log.Info("pinned image: blob in the cache", "route", pr.Route, "image", pr.Image, "blob", pr.Blob,
			"layers_done", pr.LayersDone, "layers", pr.Layers, "bytes_done", pr.BytesDone, "bytes", pr.Bytes)
	}
}

func (p *Pinner) setRunning(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = on
	if on {
		p.progress = map[string]Progress{}
	}
}

// Progress returns the last report of each image being fetched while Run
// goes on; nil once it is done.
func (p *Pinner) Progress() map[string]Progress {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	out := make(map[string]Progress, len(p.progress))
	for k, v := range p.progress {
		if v.LayersDone < v.Layers {
			out[k] = v
		}
	}
	return out
}

// Names are the pinned images as "repository:tag" or
// "repository@digest", sorted.
func (p *Pinner) Names() []string {
	out := make([]string, 0, len(p.Pins))
	for _, r := range p.Pins {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
