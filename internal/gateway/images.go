package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/snigate/snigate/images"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/oci"
)

// imageStore is a route's store (its local regcache.Cache, once
// generation.Adopt has opened or taken it) as the images' Store and
// PinStore; without one it holds nothing and keeps nothing.
type imageStore struct{ s *routeStore }

var (
	_ images.Store    = imageStore{}
	_ images.PinStore = imageStore{}
)

// errStoreNotOpen is what an imageStore without a local store answers.
var errStoreNotOpen = errors.New("its cache is not open")

func (s imageStore) Holds(d string) bool { return s.s.local != nil && s.s.local.Holds(d) }

func (s imageStore) Open(ctx context.Context, d string) (images.Blob, bool) {
	if s.s.local == nil {
		return nil, false
	}
	e, ok := s.s.local.Get(ctx, d)
	if !ok {
		return nil, false
	}
	return e, true
}

func (s imageStore) Put(ctx context.Context, d string, h http.Header, size int64, body io.Reader) error {
	if s.s.local == nil {
		return fmt.Errorf("route %q: %w", s.s.route, errStoreNotOpen)
	}
	return s.s.local.Put(ctx, d, h, size, body)
}

func (s imageStore) LookupTag(repo, tag string) (string, time.Time, bool) {
	if s.s.local == nil {
		return "", time.Time{}, false
	}
	t, ok := s.s.local.LookupTag(repo, tag)
	return t.Digest, t.Confirmed, ok
}

func (s imageStore) RememberTag(repo, tag, d string, at time.Time) error {
	if s.s.local == nil {
		return nil
	}
	return s.s.local.RememberTag(repo, tag, d, at)
}

func (s imageStore) AddPinned(d []string) {
	if s.s.local != nil {
		s.s.local.AddPinned(d)
	}
}

// pinned reports whether d is pinned in the store.
func (s imageStore) pinned(d string) bool { return s.s.local != nil && s.s.local.Pinned(d) }

func (s imageStore) SetPinned(d []string) {
	if s.s.local != nil {
		s.s.local.SetPinned(d)
	}
}

// ErrNoCacheRoute is the error for an image whose host no http route
// with a cache serves.
var ErrNoCacheRoute = errors.New("no http route with a cache serves this host")

// imageRoute is the route of the generation in force serving host (a
// routed name, exactly) with a cache, as images.Route.
func (g *Gateway) imageRoute(host string) (images.Route, error) {
	gen := g.gen.Load()
	for i := range gen.cfg.Routes {
		rc := &gen.cfg.Routes[i]
		if rc.HTTP == nil || rc.HTTP.Cache == nil || !containsName(rc.SNI, host) {
			continue
		}
		return gen.imageRoute(rc, host)
	}
	return images.Route{}, fmt.Errorf("%q: %w (routes[].sni of a route with http.cache)", host, ErrNoCacheRoute)
}

// imageRoute is rc's images.Route for requests with Host host.
func (gen *generation) imageRoute(rc *config.Route, host string) (images.Route, error) {
	br := gen.bridges[rc.Name]
	store := gen.store(rc.Name)
	if store == nil || store.local == nil || br == nil {
		return images.Route{}, fmt.Errorf("route %q: %w", rc.Name, errStoreNotOpen)
	}
	return images.Route{Name: rc.Name, Host: host, Fetch: br, Store: imageStore{store}}, nil
}

// pinImages adds the worker that keeps rc's cache.pin images in its
// cache (fetched at start and whenever a reload builds a generation);
// with no pins it unpins what an earlier configuration pinned. It works
// on the store the generation records for the route (a check, which
// opens none, never starts it).
func (gen *generation) pinImages(rc *config.Route, log *slog.Logger) {
	c := rc.HTTP.Cache
	store := gen.store(rc.Name)
	if c == nil || store == nil {
		return
	}
	rt := images.Route{Name: rc.Name, Host: pinHost(rc), Fetch: gen.bridges[rc.Name], Store: imageStore{store}}
	pins := make([]oci.Reference, 0, len(c.Pin))
	for _, s := range c.Pin {
		if ref, err := oci.ParseReference(s); err == nil { // config checked it
			pins = append(pins, ref)
		}
	}
	p := &images.Pinner{Route: rt, Pins: pins, Store: imageStore{store}, Log: log}
	gen.pinners[rc.Name] = p
	gen.workers = append(gen.workers, p)
}

// pinHost is the Host of rc's pin requests: its first SNI name that is
// not a pattern.
func pinHost(rc *config.Route) string {
	for _, n := range rc.SNI {
		if !strings.HasPrefix(n, "*.") {
			return n
		}
	}
	return strings.TrimPrefix(rc.SNI[0], "*.")
}

func containsName(names []string, host string) bool {
	for _, n := range names {
		if n == host {
			return true
		}
	}
	return false
}

// parseImages parses full image references, each with its route.
func (g *Gateway) parseImages(refs []string) ([]oci.ImageReference, []images.Route, error) {
	var out []oci.ImageReference
	var rts []images.Route
	for _, s := range refs {
		ref, err := oci.ParseImageReference(s)
		if err != nil {
			return nil, nil, fmt.Errorf("%q: %w", s, err)
		}
		rt, err := g.imageRoute(ref.Host)
		if err != nil {
			return nil, nil, err
		}
		out, rts = append(out, ref), append(rts, rt)
	}
	return out, rts, nil
}

// WarmImages fetches refs (host/repository:tag or @digest) into their
// routes' caches, every platform or those listed, reporting progress
// (the admin API's POST /api/cache/warm).
func (g *Gateway) WarmImages(ctx context.Context, refs, platforms []string, progress func(images.Progress)) ([]images.Status, error) {
	ps := make([]images.Platform, 0, len(platforms))
	for _, s := range platforms {
		p, err := images.ParsePlatform(s)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	parsed, rts, err := g.parseImages(refs)
	if err != nil {
		return nil, err
	}
	out := make([]images.Status, 0, len(parsed))
	for i, ref := range parsed {
		st := images.Warm(ctx, rts[i], ref.String(), ref.Reference, images.WarmOptions{Platforms: ps, Progress: progress})
		g.log.Info("image warmed into the cache", "route", st.Route, "image", st.Image, "digest", st.Digest,
			"complete", st.Complete, "missing", len(st.Missing), "err", st.Error)
		out = append(out, st)
	}
	return out, nil
}

// ImageStatus says of each of refs whether its route's cache holds all
// of it; no refs: every route's pinned images (with the progress of a
// pin fetch going on).
func (g *Gateway) ImageStatus(ctx context.Context, refs []string) ([]images.Status, error) {
	if len(refs) == 0 {
		return g.pinStatus(ctx), nil
	}
	parsed, rts, err := g.parseImages(refs)
	if err != nil {
		return nil, err
	}
	out := make([]images.Status, 0, len(parsed))
	for i, ref := range parsed {
		st, _ := images.Check(ctx, rts[i], ref.String(), ref.Reference, nil)
		st.Pinned = rts[i].Store.(imageStore).pinned(st.Digest)
		out = append(out, st)
	}
	return out, nil
}

// pinStatus is the status of every route's pinned images.
func (g *Gateway) pinStatus(ctx context.Context) []images.Status {
	gen := g.gen.Load()
	var out []images.Status
	for _, rc := range gen.cfg.Routes {
		p := gen.pinners[rc.Name]
		if p == nil {
			continue
		}
		fetching := p.Progress()
		for _, ref := range p.Pins {
			st, _ := images.Check(ctx, p.Route, ref.String(), ref, nil)
			st.Pinned = true
			if pr, ok := fetching[ref.String()]; ok {
				st.Fetching = &pr
			}
			out = append(out, st)
		}
	}
	return out
}

// ExportImages writes an OCI image layout of refs from their routes'
// caches into dir (absolute), which must be empty unless force.
func (g *Gateway) ExportImages(ctx context.Context, refs []string, dir string, force bool) (images.LayoutResult, error) {
	if !filepath.IsAbs(dir) {
		return images.LayoutResult{}, fmt.Errorf("export: the directory %q is not absolute", dir)
	}
	parsed, rts, err := g.parseImages(refs)
	if err != nil {
		return images.LayoutResult{}, err
	}
	items := make([]images.ExportItem, len(parsed))
	for i, ref := range parsed {
		items[i] = images.ExportItem{Route: rts[i], Name: ref.String(), Ref: ref.Reference}
	}
	res, err := images.Export(ctx, dir, force, items)
	if err == nil {
		g.log.Info("images exported from the cache", "dir", dir, "images", len(items), "blobs", res.Blobs, "bytes", res.Bytes)
	}
	return res, err
}

// ImportImages loads the OCI image layout in dir (absolute) into the
// caches of the routes its images name (org.opencontainers.image.ref.name
// host/repository:tag; repository, "host/repository", for names that are
// a tag alone), every digest verified first: a fault refuses the whole
// layout. Its tags count as confirmed now.
func (g *Gateway) ImportImages(ctx context.Context, dir, repository string) (images.LayoutResult, error) {
	if !filepath.IsAbs(dir) {
		return images.LayoutResult{}, fmt.Errorf("import: the directory %q is not absolute", dir)
	}
	l, err := images.ReadLayout(ctx, dir)
	if err != nil {
		return images.LayoutResult{}, err
	}
	items := make([]images.ImportItem, 0, len(l.Images))
	for _, img := range l.Images {
		ref, err := importRef(img, repository)
		if err != nil {
			return images.LayoutResult{}, err
		}
		rt, err := g.imageRoute(ref.Host)
		if err != nil {
			return images.LayoutResult{}, fmt.Errorf("import %s: %w", img.Name, err)
		}
		if ref.Digest != "" && ref.Digest != img.Plan.Root.Digest {
			return images.LayoutResult{}, fmt.Errorf("import %s: the layout's entry is %s", img.Name, img.Plan.Root.Digest)
		}
		items = append(items, images.ImportItem{Image: img, Route: rt, Ref: ref.Reference})
	}
	res, err := images.Import(ctx, l, items, time.Now())
	if err == nil {
		g.log.Info("images imported into the cache", "dir", dir, "images", len(items), "blobs", res.Blobs, "bytes", res.Bytes)
	}
	return res, err
}

// importRef is where a layout's image goes: its name as a full image
// reference, or a tag alone under repository.
func importRef(img images.LayoutImage, repository string) (oci.ImageReference, error) {
	if ref, err := oci.ParseImageReference(img.Name); err == nil {
		return ref, nil
	}
	if repository == "" {
		return oci.ImageReference{}, fmt.Errorf("import: the layout's image %s is named %q, not host/repository:tag: give --repository host/repository", img.Plan.Root.Digest, img.Name)
	}
	name := repository + ":" + img.Name
	if img.Name == "" || strings.Contains(img.Name, ":") {
		name = repository + "@" + img.Plan.Root.Digest
	}
	ref, err := oci.ParseImageReference(name)
	if err != nil {
		return oci.ImageReference{}, fmt.Errorf("import: %q: %w", name, err)
	}
	return ref, nil
}
