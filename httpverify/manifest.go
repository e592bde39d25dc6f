package httpverify

import (
	"encoding/json"
	"fmt"

	"github.com/snigate/snigate/oci"
)

// Limits of what is read from the registry to decide.
const (
	// MaxManifest is the largest manifest (or referrers index) read and
	// held to decide on it: the distribution registry's own limit.
	MaxManifest = 4 << 20
	// MaxDescriptors is how many entries of a manifest's layers, an
	// index's manifests or a referrers list are looked at.
	MaxDescriptors = 1024
	// MaxSignatures is how many signatures (and referrer manifests) are
	// tried for one digest, every form together.
	MaxSignatures = 16
)

// Artifact and media types of signatures.
const (
	// ArtifactCosign is cosign's signature artifact as an OCI 1.1
	// referrer (cosign sign --new-bundle-format=false
	// --registry-referrers-mode oci-1-1): simple-signing layers.
	ArtifactCosign = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// bundlePrefix starts the artifact type of a sigstore bundle referrer
	// (cosign v3's default: application/vnd.dev.sigstore.bundle.v0.3+json).
	bundlePrefix = "application/vnd.dev.sigstore.bundle"
	// annotationSignature is the layer annotation with the base64
	// signature of the layer (cosign's simple-signing payload).
	annotationSignature = "dev.cosignproject.cosign/signature"
)

// Descriptor is an OCI content descriptor.
type Descriptor = oci.Descriptor

// Manifest is an OCI or Docker image manifest, an image index or a
// manifest list, or a referrers list (an index): the descriptors it
// references.
type Manifest struct {
	MediaType    string       `json:"mediaType"`
	ArtifactType string       `json:"artifactType"`
	Config       *Descriptor  `json:"config"`
	Layers       []Descriptor `json:"layers"`
	Manifests    []Descriptor `json:"manifests"`
	Subject      *Descriptor  `json:"subject"`
}

// ParseManifest parses a manifest, an index or a referrers list from the
// registry (untrusted): every digest it holds is checked, and at most
// MaxDescriptors layers or manifests are kept.
func ParseManifest(b []byte) (Manifest, error) {
	if len(b) > MaxManifest {
		return Manifest{}, fmt.Errorf("manifest of %d bytes, more than %d", len(b), MaxManifest)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("parse manifest: %w", err)
	}
	if len(m.Layers) > MaxDescriptors || len(m.Manifests) > MaxDescriptors {
		return Manifest{}, fmt.Errorf("manifest with %d layers and %d manifests, more than %d", len(m.Layers), len(m.Manifests), MaxDescriptors)
	}
	for _, d := range m.descriptors() {
		if !oci.ValidDigest(d.Digest) {
			return Manifest{}, fmt.Errorf("parse manifest: %q is not a digest", bound(d.Digest))
		}
	}
	if m.Subject != nil && !oci.ValidDigest(m.Subject.Digest) {
		return Manifest{}, fmt.Errorf("parse manifest: subject %q is not a digest", bound(m.Subject.Digest))
	}
	return m, nil
}

// descriptors are the config, layers and manifests m references.
func (m Manifest) descriptors() []Descriptor {
	out := append([]Descriptor(nil), m.Layers...)
	out = append(out, m.Manifests...)
	if m.Config != nil {
		out = append(out, *m.Config)
	}
	return out
}

// Blobs are the digests of the config and layers of an image manifest.
func (m Manifest) Blobs() []string {
	var out []string
	if m.Config != nil {
		out = append(out, m.Config.Digest)
	}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// Children are the digests of the manifests an index lists.
func (m Manifest) Children() []string {
	out := make([]string, 0, len(m.Manifests))
	for _, c := range m.Manifests {
		out = append(out, c.Digest)
	}
	return out
}

// signatureKind says which signature a referrer's artifact type is: "cosign",
// "bundle", "notation" or "" (not one this package verifies).
func signatureKind(artifactType string) string {
	switch {
	case artifactType == ArtifactCosign:
		return "cosign"
	case artifactType == ArtifactNotation:
		return "notation"
	case len(artifactType) > len(bundlePrefix) && artifactType[:len(bundlePrefix)] == bundlePrefix:
		return "bundle"
	}
	return ""
}
