package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// Status is what a route's cache holds of an image.
type Status struct {
	Image     string    `json:"image"`
	Route     string    `json:"route"`
	Digest    string    `json:"digest,omitempty"` // the image's manifest (or index)
	Complete  bool      `json:"complete"`         // every manifest and blob is stored
	Manifests int       `json:"manifests"`
	Blobs     int       `json:"blobs"`
	Bytes     int64     `json:"bytes"`              // of the blobs
	Missing   []string  `json:"missing,omitempty"`  // the digests not stored
	Pinned    bool      `json:"pinned,omitempty"`   // a cache.pin image
	Fetching  *Progress `json:"fetching,omitempty"` // a pin's fetch going on
	Error     string    `json:"error,omitempty"`    // why the image could not be read or fetched
}

func (s Status) failed(err error) Status {
	s.Error, s.Complete = err.Error(), false
	return s
}

// check is the status of plan in rt's store.
func check(rt Route, name string, plan *Plan) Status {
	st := Status{Image: name, Route: rt.Name, Digest: plan.Root.Digest, Manifests: len(plan.Manifests),
		Blobs: len(plan.Blobs), Bytes: plan.BlobBytes()}
	st.Missing = append(st.Missing, plan.Missing...)
	for _, d := range plan.Digests() {
		if !rt.Store.Holds(d) {
			st.Missing = append(st.Missing, d)
		}
	}
	st.Complete = len(st.Missing) == 0
	return st
}

// Check says whether rt's cache holds all of image ref (every platform,
// or platforms), reading only the store: a tag is the digest the
// registry answers now through rt's chain (which, offline, answers from
// the cache's memory), else the digest last remembered for it.
func Check(ctx context.Context, rt Route, name string, ref oci.Reference, platforms []Platform) (Status, *Plan) {
	st := Status{Image: name, Route: rt.Name}
	digest, err := resolve(ctx, rt, ref)
	if err != nil {
		return st.failed(err), nil
	}
	st.Digest = digest
	body, ct, err := storedManifest(ctx, rt, Descriptor{Digest: digest})
	if errors.Is(err, errMissing) {
		st.Missing = []string{digest}
		return st, nil
	}
	if err != nil {
		return st.failed(err), nil
	}
	get := func(ctx context.Context, d Descriptor) ([]byte, string, error) { return storedManifest(ctx, rt, d) }
	plan, err := walk(ctx, Descriptor{Digest: digest, MediaType: ct}, body, ct, get, platforms)
	if err != nil {
		return st.failed(err), nil
	}
	return check(rt, name, plan), plan
}

// resolve is ref's manifest digest: its digest, else the tag's digest as
// the registry answers a HEAD through rt's chain, else as remembered.
func resolve(ctx context.Context, rt Route, ref oci.Reference) (string, error) {
	if ref.Digest != "" {
		return ref.Digest, nil
	}
	r, err := rt.ownRequest(ctx, http.MethodHead, "/v2/"+ref.Repository+"/manifests/"+ref.Tag)
	if err != nil {
		return "", err
	}
	r.Header.Set("Accept", oci.ManifestAccept)
	s := newSink(io.Discard)
	if err := rt.Fetch.ServeOwn(s, r); err == nil && s.status == http.StatusOK {
		if d := s.h.Get("Docker-Content-Digest"); oci.ValidDigest(d) {
			return d, nil
		}
	}
	if d, _, ok := rt.Store.LookupTag(ref.Repository, ref.Tag); ok {
		return d, nil
	}
	return "", fmt.Errorf("the tag %s: the registry does not answer it and the cache remembers no digest for it (cache.tags): warm it, or ask by digest", ref)
}

// storedManifest reads manifest d from rt's store (errMissing when it
// is not held).
func storedManifest(ctx context.Context, rt Route, d Descriptor) ([]byte, string, error) {
	b, ok := rt.Store.Open(ctx, d.Digest)
	if !ok {
		return nil, "", fmt.Errorf("manifest %s: %w", d.Digest, errMissing)
	}
	defer b.Close()
	body, err := io.ReadAll(io.LimitReader(b, MaxManifest+1))
	if err != nil {
		return nil, "", fmt.Errorf("read manifest %s from the cache: %w", d.Digest, err)
	}
	if len(body) > MaxManifest {
		return nil, "", fmt.Errorf("manifest %s: larger than %d bytes", d.Digest, MaxManifest)
	}
	return body, b.Header().Get("Content-Type"), nil
}
