package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/snigate/snigate/oci"
)

// Layout is an OCI image layout read by ReadLayout: every digest its
// index names, directly or through its manifests, is there and matches.
type Layout struct {
	Dir    string
	Images []LayoutImage
}

// LayoutImage is one entry of a layout's index.json.
type LayoutImage struct {
	// Name is its org.opencontainers.image.ref.name (else
	// io.containerd.image.name); "" when it has none.
	Name string
	Plan *Plan
}

// ReadLayout reads and verifies the OCI image layout in dir: its
// oci-layout file, its index.json, and every manifest and blob the index
// names (present, of the size announced, matching its digest). The first
// fault is the error, naming the digest.
func ReadLayout(ctx context.Context, dir string) (*Layout, error) {
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return nil, fmt.Errorf("import %s: not an OCI image layout (no oci-layout file): %w", dir, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	var idx manifest
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("import %s: index.json: %w", dir, err)
	}
	l := &Layout{Dir: dir}
	get := func(_ context.Context, d Descriptor) ([]byte, string, error) { return readLayoutManifest(dir, d) }
	for _, e := range idx.Manifests {
		if !oci.ValidDigest(e.Digest) {
			return nil, fmt.Errorf("import %s: index.json lists %q: not a digest", dir, e.Digest)
		}
		body, ct, err := readLayoutManifest(dir, e)
		if err != nil {
			return nil, err
		}
		plan, err := walk(ctx, e, body, cmpOr(ct, e.MediaType), get, nil)
		if err != nil {
			return nil, fmt.Errorf("import %s: %w", dir, err)
		}
		if len(plan.Missing) > 0 {
			return nil, fmt.Errorf("import %s: the layout has no blob %s (%s): nothing imported", dir, plan.Missing[0], blobPath(dir, plan.Missing[0]))
		}
		for _, b := range plan.Blobs {
			if err := verifyLayoutBlob(dir, b); err != nil {
				return nil, err
			}
		}
		name := cmpOr(e.Annotations[annotationRefName], e.Annotations[annotationImageRef])
		l.Images = append(l.Images, LayoutImage{Name: name, Plan: plan})
	}
	return l, nil
}

// readLayoutManifest reads manifest d from the layout, verified.
func readLayoutManifest(dir string, d Descriptor) ([]byte, string, error) {
	path := blobPath(dir, d.Digest)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("import %s: the layout has no blob %s (%s): nothing imported: %w", dir, d.Digest, path, errMissingFile)
	}
	if err != nil {
		return nil, "", fmt.Errorf("import %s: %w", dir, err)
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, MaxManifest+1))
	if err != nil {
		return nil, "", fmt.Errorf("import %s: %w", dir, err)
	}
	if len(body) > MaxManifest {
		return nil, "", fmt.Errorf("import %s: manifest %s is larger than %d bytes", dir, d.Digest, MaxManifest)
	}
	if err := checkDigest(body, d.Digest); err != nil {
		return nil, "", fmt.Errorf("import %s: blob %s (%s): %w: nothing imported", dir, d.Digest, path, err)
	}
	return body, d.MediaType, nil
}

// errMissingFile marks a layout's missing file (not errMissing: a
// layout must be whole).
var errMissingFile = errors.New("missing")

// verifyLayoutBlob checks that blob b is in the layout, of its size and
// matching its digest.
func verifyLayoutBlob(dir string, b Descriptor) error {
	path := blobPath(dir, b.Digest)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("import %s: the layout has no blob %s (%s): nothing imported", dir, b.Digest, path)
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", dir, err)
	}
	defer f.Close()
	h, err := newHash(b.Digest)
	if err != nil {
		return err
	}
	n, err := io.Copy(h, f)
	switch {
	case err != nil:
		return fmt.Errorf("import %s: read %s: %w", dir, path, err)
	case n != b.Size:
		return fmt.Errorf("import %s: blob %s (%s) has %d bytes, its manifest says %d: nothing imported", dir, b.Digest, path, n, b.Size)
	case !matches(h, b.Digest):
		return fmt.Errorf("import %s: blob %s (%s) does not match its digest: nothing imported", dir, b.Digest, path)
	}
	return nil
}

// ImportItem is where one image of a layout goes: the route whose cache
// stores it and, for a tag, the tag to count as confirmed.
type ImportItem struct {
	Image LayoutImage
	Route Route
	Ref   oci.Reference // Tag "" for an image without a tag
}

// Import stores the items' manifests and blobs (read from l, verified
// again as they are stored) in their routes' caches and counts their
// tags as confirmed at now.
func Import(ctx context.Context, l *Layout, items []ImportItem, now time.Time) (LayoutResult, error) {
	res := LayoutResult{Dir: l.Dir}
	stored := map[string]bool{}
	for _, it := range items {
		p := it.Image.Plan
		descs := append(append([]Descriptor(nil), p.Manifests...), p.Blobs...)
		for i, d := range descs {
			key := it.Route.Name + " " + d.Digest
			if stored[key] {
				continue
			}
			ct := "application/octet-stream"
			if i < len(p.Manifests) {
				ct = d.MediaType
			}
			if err := putFile(ctx, it.Route, l.Dir, d, ct); err != nil {
				return res, err
			}
			stored[key] = true
			res.Bytes += d.Size
		}
		if it.Ref.Tag != "" {
			if err := it.Route.Store.RememberTag(it.Ref.Repository, it.Ref.Tag, p.Root.Digest, now); err != nil {
				return res, fmt.Errorf("import: remember the tag %s: %w", it.Ref, err)
			}
		}
		st := check(it.Route, it.Image.Name, p)
		res.Images = append(res.Images, st)
	}
	res.Blobs = len(stored)
	return res, nil
}

// putFile stores the layout's file of d in rt's store.
func putFile(ctx context.Context, rt Route, dir string, d Descriptor, contentType string) error {
	if rt.Store.Holds(d.Digest) {
		return nil
	}
	f, err := os.Open(blobPath(dir, d.Digest))
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Docker-Content-Digest", d.Digest)
	if err := rt.Store.Put(ctx, d.Digest, h, d.Size, f); err != nil {
		return fmt.Errorf("import %s into the cache of route %q: %w", d.Digest, rt.Name, err)
	}
	return nil
}
