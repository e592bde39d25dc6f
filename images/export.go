package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/snigate/snigate/oci"
)

// ExportItem is one image to export: its route, its reference and the
// name it gets in the layout (org.opencontainers.image.ref.name: the
// full reference, host/repository:tag).
type ExportItem struct {
	Route Route
	Name  string
	Ref   oci.Reference
}

// LayoutResult is what an export or an import carried.
type LayoutResult struct {
	Dir    string   `json:"dir"`
	Images []Status `json:"images"`
	Blobs  int      `json:"blobs"` // distinct digests written or stored
	Bytes  int64    `json:"bytes"`
}

// ErrNotEmpty is Export's error for a directory that holds something.
var ErrNotEmpty = errors.New("the directory is not empty")

// Export writes an OCI image layout of items (every platform) into dir
// from their routes' caches: oci-layout, index.json naming each image
// (org.opencontainers.image.ref.name) and blobs/<algorithm>/<hex>. dir
// must be absent or empty, unless force (its files of the same names are
// replaced). Every image must be complete in the cache: otherwise nothing
// is written and the error names what is missing.
func Export(ctx context.Context, dir string, force bool, items []ExportItem) (LayoutResult, error) {
	res := LayoutResult{Dir: dir}
	if err := exportDir(dir, force); err != nil {
		return res, err
	}
	plans := make([]*Plan, len(items))
	var missing []string
	for i, it := range items {
		st, plan := Check(ctx, it.Route, it.Name, it.Ref, nil)
		res.Images = append(res.Images, st)
		switch {
		case st.Error != "":
			missing = append(missing, fmt.Sprintf("%s: %s", it.Name, st.Error))
		case !st.Complete:
			missing = append(missing, fmt.Sprintf("%s: the cache does not hold %s", it.Name, strings.Join(st.Missing, ", ")))
		}
		plans[i] = plan
	}
	if len(missing) > 0 {
		return res, fmt.Errorf("export: incomplete in the cache (warm them first: snigate ctl cache warm): %s", strings.Join(missing, "; "))
	}
	index := manifest{SchemaVersion: 2, MediaType: MediaOCIIndex, Manifests: []Descriptor{}}
	written := map[string]bool{}
	for i, it := range items {
		n, err := writePlan(ctx, dir, it.Route, plans[i], written)
		if err != nil {
			return res, err
		}
		res.Bytes += n
		root := plans[i].Manifests[0]
		index.Manifests = append(index.Manifests, Descriptor{MediaType: root.MediaType, Digest: root.Digest, Size: root.Size,
			Annotations: map[string]string{annotationRefName: it.Name, annotationImageRef: it.Name}})
	}
	res.Blobs = len(written)
	if err := writeJSONFile(filepath.Join(dir, "oci-layout"), map[string]string{"imageLayoutVersion": "1.0.0"}); err != nil {
		return res, err
	}
	return res, writeJSONFile(filepath.Join(dir, "index.json"), index)
}

// exportDir creates dir, or checks that it is empty (or force).
func exportDir(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return fmt.Errorf("export to %s: %w", dir, err)
	case len(ents) > 0 && !force:
		return fmt.Errorf("export to %s: %w: give an empty or new directory, or --force to write over it", dir, ErrNotEmpty)
	}
	return nil
}

// writePlan copies the plan's manifests and blobs from rt's store into
// dir's blobs/, each digest once (written), and returns the bytes
// written.
func writePlan(ctx context.Context, dir string, rt Route, plan *Plan, written map[string]bool) (int64, error) {
	var n int64
	for _, d := range plan.Digests() {
		if written[d] {
			continue
		}
		m, err := copyBlob(ctx, dir, rt, d)
		if err != nil {
			return n, err
		}
		written[d] = true
		n += m
	}
	return n, nil
}

// blobPath is digest's file in a layout.
func blobPath(dir, digest string) string {
	alg, hex, _ := strings.Cut(digest, ":")
	return filepath.Join(dir, "blobs", alg, hex)
}

// copyBlob writes digest from rt's store into the layout, under a
// temporary name renamed into place.
func copyBlob(ctx context.Context, dir string, rt Route, digest string) (int64, error) {
	b, ok := rt.Store.Open(ctx, digest)
	if !ok {
		return 0, fmt.Errorf("export: the cache of route %q no longer holds %s (evicted meanwhile?)", rt.Name, digest)
	}
	defer b.Close()
	path := blobPath(dir, digest)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return 0, fmt.Errorf("export: %w", err)
	}
	n, err := io.Copy(f, b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return 0, fmt.Errorf("export %s: %w", digest, err)
	}
	return n, nil
}

// writeJSONFile writes v as JSON into path, atomically.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("export: %w", err)
	}
	return nil
}
