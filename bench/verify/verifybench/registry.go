package main

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
)

// registry serves n signed images of bench/app: manifests by digest (the
// first also as tag v1), their signature tags and payloads, and /v2/.
type registry struct {
	paths   map[string][]byte
	types   map[string]string
	digests []string
}

func newRegistry(key *ecdsa.PrivateKey, n int) (*registry, error) {
	r := &registry{paths: map[string][]byte{}, types: map[string]string{}}
	put := func(p, mt string, b []byte) { r.paths[p], r.types[p] = b, mt }
	const mt = "application/vnd.oci.image.manifest.v1+json"
	layer := "sha256:" + hex.EncodeToString(make([]byte, 32))
	for i := range n {
		m := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":2},`+
			`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":1}],"annotations":{"n":"%d"}}`, mt, layer, layer, i)
		d := digestOf([]byte(m))
		r.digests = append(r.digests, d)
		put("/v2/bench/app/manifests/"+d, mt, []byte(m))
		if i == 0 {
			put("/v2/bench/app/manifests/v1", mt, []byte(m))
		}
		payload := []byte(`{"critical":{"identity":{"docker-reference":"bench/app"},"image":{"docker-manifest-digest":"` + d +
			`"},"type":"cosign container image signature"},"optional":null}`)
		h := sha256.Sum256(payload)
		sig, err := ecdsa.SignASN1(rand.Reader, key, h[:])
		if err != nil {
			return nil, err
		}
		pd := digestOf(payload)
		put("/v2/bench/app/blobs/"+pd, "application/octet-stream", payload)
		sm, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mt,
			"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": pd, "size": len(payload)},
			"layers": []any{map[string]any{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json", "digest": pd, "size": len(payload),
				"annotations": map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}}}})
		put("/v2/bench/app/manifests/sha256-"+d[len("sha256:"):]+".sig", mt, sm)
	}
	return r, nil
}

// byDigest hands out the images' digests in turn (1 to n-1: the first
// is the tag's); once each unless cycle (the route without verify
// decides nothing: it may see a digest again).
func (r *registry) byDigest(next *atomic.Int64, cycle bool) func() (string, string, bool) {
	return func() (string, string, bool) {
		i := next.Add(1)
		if cycle {
			i = 1 + (i-1)%int64(len(r.digests)-1)
		}
		if i >= int64(len(r.digests)) {
			return "", "", false
		}
		d := r.digests[i]
		return "/v2/bench/app/manifests/" + d, d, true
	}
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/v2/" {
		w.Write([]byte("{}"))
		return
	}
	b, ok := r.paths[req.URL.Path]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not here"}]}`))
		return
	}
	w.Header().Set("Content-Type", r.types[req.URL.Path])
	w.Header().Set("Docker-Content-Digest", digestOf(b))
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if req.Method != http.MethodHead {
		w.Write(b)
	}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
