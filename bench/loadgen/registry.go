package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The registry's content: one image whose manifest lists smallBlobs small
// blobs (the first is its config) and one large blob.
const (
	smallBlobs    = 16
	smallBlobSize = 4 << 10
	benchRepo     = "bench/app" // the repository the http scenarios pull (any name answers)
	benchTag      = "latest"
)

// Media types of the OCI image specification.
const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// forwardedEcho is the response header of GET /v2/ that repeats the
// X-Forwarded-For the registry received, so the load generator can tell
// an HTTP-aware proxy (it replaces the node's header) from one that copies
// bytes (the node's own header gets through).
const forwardedEcho = "X-Bench-Forwarded-For"

// registry is the HTTP upstream of the http scenarios: enough of the OCI
// distribution API for a pull (GET and HEAD of /v2/, of manifests by tag
// or digest and of blobs by digest), over mTLS, h2 or http/1.1 by ALPN.
type registry struct {
	manifest       []byte
	manifestDigest string
	small          map[string][]byte // digest → content
	big            patternBlob
	bigDigest      string
	// layer is the cache scenarios' layer (outside the manifest: the
	// load generator knows its digest from its size); size 0: none.
	layer       patternBlob
	layerDigest string
	// sent, when set, is told the body bytes of blob responses as they
	// are written (the cache scenarios: how much of the layer crossed
	// the uplink).
	sent func(n int64)
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// imageManifest is an OCI image manifest.
type imageManifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// newRegistry builds the image: small blobs from a fixed seed, a large
// blob of bigSize bytes (its digest costs one read of it), the manifest.
func newRegistry(bigSize int64) *registry {
	reg := &registry{small: map[string][]byte{}, big: newPatternBlob(bigSize, 1)}
	reg.bigDigest = reg.big.digest()
	m := imageManifest{SchemaVersion: 2, MediaType: mediaManifest}
	for i := range smallBlobs {
		b := make([]byte, smallBlobSize)
		newPatternBlob(smallBlobSize, uint64(100+i)).ReadAt(b, 0)
		d := descriptor{MediaType: mediaLayer, Digest: digestOf(b), Size: smallBlobSize}
		reg.small[d.Digest] = b
		if i == 0 {
			d.MediaType = mediaConfig
			m.Config = d
			continue
		}
		m.Layers = append(m.Layers, d)
	}
	m.Layers = append(m.Layers, descriptor{MediaType: mediaLayer, Digest: reg.bigDigest, Size: bigSize})
	reg.manifest, _ = json.Marshal(m)
	reg.manifestDigest = digestOf(reg.manifest)
	return reg
}

// addLayer serves layer too, by its digest (one read of it).
func (reg *registry) addLayer(layer patternBlob) {
	reg.layer, reg.layerDigest = layer, layer.digest()
}

func (reg *registry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		ociError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "this registry only serves pulls (GET, HEAD)")
		return
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if r.URL.Path == "/v2/" {
		reg.base(w, r)
		return
	}
	repo, kind, ref, ok := parseAPIPath(r.URL.Path)
	switch {
	case !ok:
		ociError(w, http.StatusNotFound, "NAME_UNKNOWN", fmt.Sprintf("%s is not a manifest or blob path of the distribution API", r.URL.Path))
	case kind == "manifests":
		reg.serveManifest(w, r, repo, ref)
	default:
		reg.serveBlob(w, r, ref)
	}
}

// base answers /v2/ (the API version check), repeating X-Forwarded-For.
func (reg *registry) base(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(forwardedEcho, strings.Join(r.Header.Values("X-Forwarded-For"), ", "))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "2")
	if r.Method == http.MethodGet {
		io.WriteString(w, "{}")
	}
}

// serveManifest answers the manifest by any tag, or by its digest.
func (reg *registry) serveManifest(w http.ResponseWriter, r *http.Request, repo, ref string) {
	if strings.HasPrefix(ref, "sha256:") && ref != reg.manifestDigest {
		ociError(w, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("manifest %s is not in %s", ref, repo))
		return
	}
	w.Header().Set("Content-Type", mediaManifest)
	w.Header().Set("Docker-Content-Digest", reg.manifestDigest)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(reg.manifest))
}

// serveBlob answers a blob by digest, the large one streamed from its pattern.
func (reg *registry) serveBlob(w http.ResponseWriter, r *http.Request, digest string) {
	var content io.ReadSeeker
	if b, ok := reg.small[digest]; ok {
		content = bytes.NewReader(b)
	} else if digest == reg.bigDigest {
		content = reg.big.reader()
	} else if digest == reg.layerDigest && reg.layer.size > 0 {
		content = reg.layer.reader()
	} else {
		ociError(w, http.StatusNotFound, "BLOB_UNKNOWN", fmt.Sprintf("blob %s is unknown", digest))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Docker-Content-Digest", digest)
	if reg.sent == nil {
		http.ServeContent(w, r, "", time.Time{}, content)
		return
	}
	http.ServeContent(countingWriter{w, reg.sent}, r, "", time.Time{}, content)
}

// countingWriter tells sent the body bytes written through it, write by
// write, so that the count is current when a proxy has received them,
// not only when the handler returns.
type countingWriter struct {
	http.ResponseWriter
	sent func(n int64)
}

func (cw countingWriter) Write(b []byte) (int, error) {
	n, err := cw.ResponseWriter.Write(b)
	cw.sent(int64(n))
	return n, err
}

// parseAPIPath splits /v2/<name>/manifests/<reference> and
// /v2/<name>/blobs/<digest> (name of one or more segments).
func parseAPIPath(p string) (repo, kind, ref string, ok bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	if !ok {
		return "", "", "", false
	}
	for _, k := range []string{"manifests", "blobs"} {
		i := strings.LastIndex(rest, "/"+k+"/")
		if i <= 0 {
			continue
		}
		repo, ref = rest[:i], rest[i+len(k)+2:]
		if ref == "" || strings.Contains(ref, "/") {
			return "", "", "", false
		}
		return repo, k, ref, true
	}
	return "", "", "", false
}

// ociError writes the distribution API's error body.
func ociError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}})
}
