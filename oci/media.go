package oci

import "strings"

// The manifest media types the gateway asks for and understands: OCI
// image manifests and indexes, Docker schema 2 manifests and lists.
const (
	MediaOCIIndex    = "application/vnd.oci.image.index.v1+json"
	MediaOCIManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaDockerList  = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaDockerV2    = "application/vnd.docker.distribution.manifest.v2+json"
)

// ManifestAccept is the Accept header of a manifest read that takes any
// of them, as a container runtime asks.
var ManifestAccept = strings.Join([]string{MediaOCIIndex, MediaOCIManifest, MediaDockerList, MediaDockerV2}, ", ")
