package images

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/snigate/snigate/oci"
)

// Plan is everything an image needs: its manifests (the root first) and
// the blobs (configs and layers) they name, each once.
type Plan struct {
	Root      Descriptor
	Manifests []Descriptor
	Blobs     []Descriptor
	// Missing are the manifests the getter did not have: what they name
	// is not in the plan.
	Missing []string
}

// Digests are every digest of the plan: manifests, then blobs.
func (p *Plan) Digests() []string {
	out := make([]string, 0, len(p.Manifests)+len(p.Blobs))
	for _, d := range p.Manifests {
		out = append(out, d.Digest)
	}
	for _, d := range p.Blobs {
		out = append(out, d.Digest)
	}
	return out
}

// BlobBytes is the size of the plan's blobs.
func (p *Plan) BlobBytes() int64 {
	var n int64
	for _, d := range p.Blobs {
		n += d.Size
	}
	return n
}

// errMissing is a getter's error for content it does not have.
var errMissing = errors.New("not held")

// getFunc returns a manifest's bytes and Content-Type; an error wrapping
// errMissing means it is not there (the walk goes on without it).
type getFunc func(ctx context.Context, d Descriptor) ([]byte, string, error)

// walk builds the plan of the image whose root manifest is body (root's
// digest, already checked), reading the manifests it lists with get and
// keeping the index entries of platforms (empty: all).
func walk(ctx context.Context, root Descriptor, body []byte, ct string, get getFunc, platforms []Platform) (*Plan, error) {
	p := &Plan{Root: root}
	w := &walker{plan: p, get: get, platforms: platforms, seen: map[string]bool{}}
	if err := w.manifest(ctx, root, body, ct, 0); err != nil {
		return nil, err
	}
	return p, nil
}

type walker struct {
	plan      *Plan
	get       getFunc
	platforms []Platform
	seen      map[string]bool
}

func (w *walker) manifest(ctx context.Context, d Descriptor, body []byte, ct string, depth int) error {
	m, mt, err := parseManifest(body, ct)
	if err != nil {
		return fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	d.MediaType, d.Size = mt, int64(len(body))
	w.plan.Manifests = append(w.plan.Manifests, d)
	w.seen[d.Digest] = true
	if !m.isIndex() {
		for _, b := range append([]Descriptor{*m.Config}, m.Layers...) {
			if err := w.blob(b); err != nil {
				return fmt.Errorf("manifest %s: %w", d.Digest, err)
			}
		}
		return nil
	}
	if depth >= maxDepth {
		return fmt.Errorf("manifest %s: indexes nested deeper than %d", d.Digest, maxDepth)
	}
	for _, c := range m.Manifests {
		if !wanted(c.Platform, w.platforms) || w.seen[c.Digest] {
			continue
		}
		if !oci.ValidDigest(c.Digest) {
			return fmt.Errorf("manifest %s lists %q: not a digest", d.Digest, c.Digest)
		}
		b, cct, err := w.get(ctx, c)
		switch {
		case errors.Is(err, errMissing):
			w.plan.Missing = append(w.plan.Missing, c.Digest)
			continue
		case err != nil:
			return err
		}
		if err := w.manifest(ctx, c, b, cmpOr(cct, c.MediaType), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) blob(b Descriptor) error {
	if !oci.ValidDigest(b.Digest) || b.Size < 0 {
		return fmt.Errorf("lists %q (%d bytes): not a digest and size", b.Digest, b.Size)
	}
	if !w.seen[b.Digest] {
		w.seen[b.Digest] = true
		w.plan.Blobs = append(w.plan.Blobs, b)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// newHash returns the hash of digest's algorithm (sha256 or sha512).
func newHash(digest string) (hash.Hash, error) {
	switch {
	case strings.HasPrefix(digest, "sha256:"):
		return sha256.New(), nil
	case strings.HasPrefix(digest, "sha512:"):
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("digest %q: want sha256 or sha512", digest)
}

// matches reports whether h's sum is digest's.
func matches(h hash.Hash, digest string) bool {
	_, want, _ := strings.Cut(digest, ":")
	return hex.EncodeToString(h.Sum(nil)) == want
}

// checkDigest says whether body matches digest (sha256 or sha512).
func checkDigest(body []byte, digest string) error {
	h, err := newHash(digest)
	if err != nil {
		return err
	}
	h.Write(body)
	if !matches(h, digest) {
		return fmt.Errorf("the bytes do not match %s", digest)
	}
	return nil
}

func sha256Digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])
}
