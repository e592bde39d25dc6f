package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// catalog is what the http scenarios fetch, as the registry's manifest
// lists it: the manifest's digest, the small blobs (config and small
// layers) and the large blob.
type catalog struct {
	manifestDigest string
	small          []descriptor
	big            descriptor
}

// manifestPath is the path of the image's manifest, by tag.
const manifestPath = "/v2/" + benchRepo + "/manifests/" + benchTag

func blobPath(digest string) string { return "/v2/" + benchRepo + "/blobs/" + digest }

// spoofedFor is the X-Forwarded-For the probe sends as if it were a node
// lying about its address (TEST-NET-1, never the bench's own address).
const spoofedFor = "192.0.2.7"

// errCopiesBytes says that a target passed the client's own
// X-Forwarded-For to the registry: it does not speak HTTP (a snigate
// build without the HTTP bridge copies a bridge route's bytes).
var errCopiesBytes = errors.New("the registry received the client's own X-Forwarded-For: the target copies bytes instead of speaking HTTP " +
	"(snigate: this build has no HTTP bridge for routes[].http yet, or the route has no http:)")

// probeHTTP checks that t's http address serves the registry through an
// HTTP-aware proxy (the registry sees the proxy's X-Forwarded-For, not
// the node's) and returns the catalog its manifest lists.
func probeHTTP(t target, p *material, curves []tls.CurveID) (*catalog, error) {
	var ts transports
	defer ts.closeAll()
	c := ts.new(t.HTTP, httpClientTLS(t, p, curves), true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	buf := make([]byte, 64<<10)
	_, h, err := fetch(ctx, c, "/v2/", http.Header{"X-Forwarded-For": {spoofedFor}}, buf)
	if err != nil {
		return nil, fmt.Errorf("it fails to answer GET /v2/: %w", err)
	}
	if !t.Direct {
		if err := checkForwarded(h.Get(forwardedEcho)); err != nil {
			return nil, err
		}
	}
	n, h, err := fetch(ctx, c, manifestPath, nil, buf)
	if err != nil {
		return nil, fmt.Errorf("it fails to answer GET %s: %w", manifestPath, err)
	}
	if n > int64(len(buf)) {
		return nil, fmt.Errorf("GET %s: a manifest of %d bytes, more than %d", manifestPath, n, len(buf))
	}
	return parseCatalog(buf[:n], h.Get("Docker-Content-Digest"))
}

// checkForwarded judges the X-Forwarded-For the registry saw for a
// request that carried spoofedFor.
func checkForwarded(seen string) error {
	switch {
	case strings.Contains(seen, spoofedFor):
		return errCopiesBytes
	case seen == "":
		return errors.New("the registry received no X-Forwarded-For: the target does not set it (every proxy of the bench sets it, as snigate's http routes do)")
	}
	return nil
}

// parseCatalog reads the manifest body, checking it against its digest
// header; the large blob is the largest layer.
func parseCatalog(body []byte, digest string) (*catalog, error) {
	if got := digestOf(body); got != digest {
		return nil, fmt.Errorf("manifest: Docker-Content-Digest %q, but the body's digest is %s", digest, got)
	}
	var m imageManifest
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	c := &catalog{manifestDigest: digest, small: []descriptor{m.Config}}
	for _, l := range m.Layers {
		if l.Size > c.big.Size {
			c.big = l
		}
	}
	for _, l := range m.Layers {
		if l.Digest != c.big.Digest {
			c.small = append(c.small, l)
		}
	}
	if c.big.Size <= smallBlobSize || m.Config.Digest == "" {
		return nil, fmt.Errorf("manifest: want a config and a layer larger than %d bytes, got %s", smallBlobSize, body)
	}
	return c, nil
}
