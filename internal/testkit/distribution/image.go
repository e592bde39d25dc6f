package distribution

import (
	"context"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Pull reads ref through rt (anonymously as far as go-containerregistry
// knows), every layer to its end, and returns the image's digest.
func Pull(ctx context.Context, ref name.Reference, rt http.RoundTripper) (v1.Hash, error) {
	img, err := remote.Image(ref, remote.WithTransport(rt), remote.WithContext(ctx))
	if err != nil {
		return v1.Hash{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, l := range layers {
		rc, err := l.Compressed() // verified against the layer's digest as it is read
		if err != nil {
			return v1.Hash{}, err
		}
		_, err = io.Copy(io.Discard, rc)
		_ = rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
	}
	return img.Digest()
}
