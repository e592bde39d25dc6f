package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/snigate/snigate/oci"
)

// MaxManifest is the largest manifest read (the distribution
// specification's limit).
const MaxManifest = 4 << 20

// maxDepth bounds indexes within indexes.
const maxDepth = 4

// The manifest media types asked for (Accept) and understood.
const (
	MediaOCIIndex      = oci.MediaOCIIndex
	MediaOCIManifest   = oci.MediaOCIManifest
	MediaDockerList    = oci.MediaDockerList
	MediaDockerV2      = oci.MediaDockerV2
	annotationRefName  = "org.opencontainers.image.ref.name"
	annotationImageRef = "io.containerd.image.name"
)

// Descriptor names content: its media type, digest and size, an index
// entry's platform (the OCI descriptor).
type Descriptor = oci.Descriptor

// Platform is an index entry's platform.
type Platform = oci.Platform

// ParsePlatform parses "os/arch" or "os/arch/variant".
func ParsePlatform(s string) (Platform, error) {
	f := strings.Split(s, "/")
	if len(f) < 2 || len(f) > 3 || f[0] == "" || f[1] == "" {
		return Platform{}, fmt.Errorf("platform %q: want os/arch or os/arch/variant, such as linux/amd64", s)
	}
	p := Platform{OS: f[0], Architecture: f[1]}
	if len(f) == 3 {
		p.Variant = f[2]
	}
	return p, nil
}

// wanted reports whether an index entry of platform p is in platforms
// (empty: every platform; an entry without a platform always is).
func wanted(p *Platform, platforms []Platform) bool {
	if len(platforms) == 0 || p == nil {
		return true
	}
	for _, w := range platforms {
		if w.OS == p.OS && w.Architecture == p.Architecture && (w.Variant == "" || w.Variant == p.Variant) {
			return true
		}
	}
	return false
}

// manifest is an image manifest or an index, as far as the images need.
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        *Descriptor  `json:"config"`
	Layers        []Descriptor `json:"layers"`
	Manifests     []Descriptor `json:"manifests"`
}

// errUnsupported is a manifest this package does not read.
var errUnsupported = errors.New("not an OCI or Docker v2 image manifest or index")

// parseManifest parses body, whose Content-Type was contentType.
func parseManifest(body []byte, contentType string) (manifest, string, error) {
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return m, "", fmt.Errorf("parse manifest: %w", err)
	}
	mt := m.MediaType
	if mt == "" {
		mt = contentType
	}
	switch {
	case m.SchemaVersion != 2:
		return m, mt, fmt.Errorf("%w (schemaVersion %d)", errUnsupported, m.SchemaVersion)
	case m.Manifests != nil || mt == MediaOCIIndex || mt == MediaDockerList:
		if mt == "" {
			mt = MediaOCIIndex
		}
		return m, mt, nil
	case m.Config != nil:
		if mt == "" {
			mt = MediaOCIManifest
		}
		return m, mt, nil
	}
	return m, mt, errUnsupported
}

// isIndex reports whether m lists manifests.
func (m manifest) isIndex() bool { return m.Config == nil }
