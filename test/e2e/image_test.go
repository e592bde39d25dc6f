package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The test image: a few small random layers, OCI media types throughout so
// that skopeo copies it to an oci: directory without converting (and so
// without changing) the manifest, for this machine's platform so that
// containerd's ctr unpacks it.
const (
	imageRepo   = "e2e/app"
	imageTag    = "1"
	imageLayers = 3
	layerBytes  = 4096
)

// refNameAnnotation names an image in an OCI layout's index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// testImage is the image pushed into the registry.
type testImage struct {
	layout string  // OCI layout directory; skopeo's "oci:DIR:TAG"
	digest v1.Hash // manifest digest, what every pull must end with
}

func newTestImage(dir string) (*testImage, error) {
	img, err := randomImage()
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	err = p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: imageTag}))
	if err != nil {
		return nil, fmt.Errorf("write OCI layout %s: %w", dir, err)
	}
	return &testImage{layout: dir, digest: digest}, nil
}

func randomImage() (v1.Image, error) {
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	layers := make([]v1.Layer, 0, imageLayers)
	for range imageLayers {
		l, err := random.Layer(layerBytes, types.OCILayer)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	img, err := mutate.AppendLayers(base, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Cmd = []string{"/bin/true"}
	return mutate.ConfigFile(img, cf)
}

// ociIndexDigest returns the digest of the manifest tagged tag in the OCI
// layout dir (what `skopeo copy ... oci:dir:tag` wrote).
func ociIndexDigest(dir, tag string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return "", err
	}
	var idx v1.IndexManifest
	if err := json.Unmarshal(b, &idx); err != nil {
		return "", fmt.Errorf("%s/index.json: %w", dir, err)
	}
	for _, m := range idx.Manifests {
		if m.Annotations[refNameAnnotation] == tag {
			return m.Digest.String(), nil
		}
	}
	return "", fmt.Errorf("%s/index.json has no manifest tagged %q: %s", dir, tag, b)
}
