package httpverify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// signer is a test key pair, as cosign generate-key-pair makes (ECDSA P-256).
type signer struct {
	priv *ecdsa.PrivateKey
	key  Key
	pem  []byte
}

func newSigner(t testing.TB) *signer {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	k, err := ParseKey(p)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{priv: priv, key: k, pem: p}
}

func (s *signer) sign(t testing.TB, msg []byte) []byte {
	t.Helper()
	h := sha256.Sum256(msg)
	sig, err := ecdsa.SignASN1(rand.Reader, s.priv, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// fakeRegistry serves paths from a map, with the digest header; what
// it was asked for is counted.
type fakeRegistry struct {
	mu    sync.Mutex
	paths map[string]object
	asked map[string]int
	down  bool // every request: 503
}

type object struct {
	body      []byte
	mediaType string
}

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{paths: map[string]object{}, asked: map[string]int{}}
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	o, ok := f.paths[r.URL.Path]
	f.asked[r.URL.Path]++
	down := f.down
	f.mu.Unlock()
	switch {
	case down:
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	case !ok:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", o.mediaType)
	w.Header().Set("Docker-Content-Digest", digestOf("", o.body))
	if r.Method != http.MethodHead {
		_, _ = w.Write(o.body)
	}
}

func (f *fakeRegistry) put(path, mediaType string, body []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paths[path] = object{body: body, mediaType: mediaType}
	return digestOf("", body)
}

func (f *fakeRegistry) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
}

func (f *fakeRegistry) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[path]
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	mtManifest = "application/vnd.oci.image.manifest.v1+json"
	mtIndex    = "application/vnd.oci.image.index.v1+json"
)

// pushImage stores an image manifest with a config and one layer in
// repo under tag and returns its digest.
func (f *fakeRegistry) pushImage(t testing.TB, repo, tag, content string) string {
	t.Helper()
	cfgBody := []byte("cfg" + content)
	cfg := digestOf("", cfgBody)
	f.put("/v2/"+repo+"/blobs/"+cfg, "application/octet-stream", cfgBody)
	layer := digestOf("", []byte("layer"+content))
	f.put("/v2/"+repo+"/blobs/"+layer, "application/octet-stream", []byte("layer"+content))
	m := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtManifest,
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 3},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": 5}}})
	d := f.put("/v2/"+repo+"/manifests/"+tag, mtManifest, m)
	f.put("/v2/"+repo+"/manifests/"+d, mtManifest, m)
	return d
}

// simplePayload is cosign's simple-signing payload for digest.
func simplePayload(repo, digest string) []byte {
	return []byte(`{"critical":{"identity":{"docker-reference":"registry.example/` + repo + `"},"image":{"docker-manifest-digest":"` +
		digest + `"},"type":"cosign container image signature"},"optional":null}`)
}

// signTag writes cosign's signature tag for digest, signed by s, with
// payload (simplePayload when nil); tamper flips a byte of the signature.
func (f *fakeRegistry) signTag(t testing.TB, s *signer, repo, digest string, payload []byte, tamper bool) {
	t.Helper()
	m := f.simpleSigningManifest(t, s, repo, digest, payload, tamper, "")
	f.put("/v2/"+repo+"/manifests/"+tagOf(digest)+".sig", mtManifest, m)
}

func (f *fakeRegistry) simpleSigningManifest(t testing.TB, s *signer, repo, digest string, payload []byte, tamper bool, artifactType string) []byte {
	t.Helper()
	if payload == nil {
		payload = simplePayload(repo, digest)
	}
	sig := s.sign(t, payload)
	if tamper {
		sig[len(sig)/2] ^= 0xff
	}
	pd := f.put("/v2/"+repo+"/blobs/"+digestOf("", payload), "application/octet-stream", payload)
	m := map[string]any{"schemaVersion": 2, "mediaType": mtManifest,
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": pd, "size": 2},
		"layers": []any{map[string]any{"mediaType": "application/vnd.dev.cosign.simplesigning.v1+json", "digest": pd,
			"size": len(payload), "annotations": map[string]string{annotationSignature: base64.StdEncoding.EncodeToString(sig)}}}}
	if artifactType != "" {
		m["artifactType"] = artifactType
		m["subject"] = map[string]any{"mediaType": mtManifest, "digest": digest, "size": 1}
	}
	return mustJSON(t, m)
}

// bundleReferrer writes a sigstore bundle referrer (cosign v3's default)
// for digest, listed by the referrers API (api) or the tag schema.
func (f *fakeRegistry) bundleReferrer(t testing.TB, s *signer, repo, digest string, api bool) {
	t.Helper()
	hex := strings.TrimPrefix(digest, "sha256:")
	stmt := []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"` + hex +
		`"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`)
	sig := s.sign(t, pae("application/vnd.in-toto+json", stmt))
	b := mustJSON(t, map[string]any{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
		"verificationMaterial": map[string]any{"publicKey": map[string]string{"hint": "x"}},
		"dsseEnvelope": map[string]any{"payload": stmt, "payloadType": "application/vnd.in-toto+json",
			"signatures": []any{map[string]any{"sig": sig}}}})
	bd := f.put("/v2/"+repo+"/blobs/"+digestOf("", b), "application/vnd.dev.sigstore.bundle.v0.3+json", b)
	at := "application/vnd.dev.sigstore.bundle.v0.3+json"
	m := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "artifactType": at,
		"config":  map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": digestOf("", []byte("{}")), "size": 2},
		"layers":  []any{map[string]any{"mediaType": at, "digest": bd, "size": len(b)}},
		"subject": map[string]any{"mediaType": mtManifest, "digest": digest, "size": 1}})
	f.referrer(t, repo, digest, m, at, api)
}

// cosignReferrer writes a legacy cosign signature as an OCI referrer.
func (f *fakeRegistry) cosignReferrer(t testing.TB, s *signer, repo, digest string, api bool) {
	t.Helper()
	m := f.simpleSigningManifest(t, s, repo, digest, nil, false, ArtifactCosign)
	f.referrer(t, repo, digest, m, ArtifactCosign, api)
}

func (f *fakeRegistry) referrer(t testing.TB, repo, digest string, m []byte, at string, api bool) {
	md := f.put("/v2/"+repo+"/manifests/"+digestOf("", m), mtManifest, m)
	idx := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtIndex,
		"manifests": []any{map[string]any{"mediaType": mtManifest, "digest": md, "size": len(m), "artifactType": at}}})
	if api {
		f.put("/v2/"+repo+"/referrers/"+digest, mtIndex, idx)
	} else {
		f.put("/v2/"+repo+"/manifests/"+tagOf(digest), mtIndex, idx)
	}
}
