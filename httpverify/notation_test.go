package httpverify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	notationsigner "github.com/notaryproject/notation-go/signer"
	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// notary is a test Notary Project signing identity: a root CA and a
// code-signing leaf it issued, as notation cert generate-test makes
// (the notation CLI is not served by the module proxy here, so the test
// signs with notation-go's own signer library).
type notary struct {
	root *x509.Certificate
	leaf *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte // the root, PEM
}

func newNotary(t testing.TB, cn string) *notary {
	t.Helper()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rootTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + " root", Organization: []string{"snigate test"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	rootDER, err := x509.CreateCertificate(rand.Reader, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := x509.ParseCertificate(rootDER)
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"snigate test"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, root, &leafKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(leafDER)
	return &notary{root: root, leaf: leaf, key: leafKey, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: rootDER})}
}

// sign is a JWS envelope of the descriptor, made by notation-go's signer.
func (n *notary) sign(t testing.TB, desc ocispec.Descriptor) []byte {
	t.Helper()
	s, err := notationsigner.NewGenericSigner(n.key, []*x509.Certificate{n.leaf, n.root})
	if err != nil {
		t.Fatal(err)
	}
	env, _, err := s.Sign(context.Background(), desc, notation.SignerSignOptions{SignatureMediaType: mediaTypeJWS})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// trustDir writes a trust store holding the roots of ns under
// x509/ca/test and a trust policy for scope; it returns their paths.
func trustDir(t testing.TB, scope string, ns ...*notary) (store, policy string) {
	t.Helper()
	d := t.TempDir()
	store = filepath.Join(d, "truststore")
	ca := filepath.Join(store, "x509", "ca", "test")
	if err := os.MkdirAll(ca, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, n := range ns {
		if err := os.WriteFile(filepath.Join(ca, "root"+string(rune('a'+i))+".pem"), n.pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policy = filepath.Join(d, "trustpolicy.json")
	doc := `{"version":"1.0","trustPolicies":[{"name":"test","registryScopes":["` + scope + `"],` +
		`"signatureVerification":{"level":"strict"},"trustStores":["ca:test"],"trustedIdentities":["*"]}]}`
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return store, policy
}

// notationReferrer writes a Notary Project signature of digest (the
// manifest at /v2/repo/manifests/digest) by n as an OCI referrer, listed
// by the referrers API (api) or the tag schema; tamper flips a byte of
// the envelope's signature.
func (f *fakeRegistry) notationReferrer(t testing.TB, n *notary, repo, digest string, api, tamper bool) {
	t.Helper()
	f.mu.Lock()
	body := f.paths["/v2/"+repo+"/manifests/"+digest].body
	f.mu.Unlock()
	desc := ocispec.Descriptor{MediaType: mtManifest, Digest: godigest.Digest(digest), Size: int64(len(body))}
	env := n.sign(t, desc)
	if tamper {
		i := strings.LastIndex(string(env), `"signature":"`) + len(`"signature":"`) + 4
		env[i] ^= 1
	}
	ed := f.put("/v2/"+repo+"/blobs/"+digestOf("", env), mediaTypeJWS, env)
	m := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "artifactType": ArtifactNotation,
		"config":  map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": digestOf("", []byte("{}")), "size": 2},
		"layers":  []any{map[string]any{"mediaType": mediaTypeJWS, "digest": ed, "size": len(env)}},
		"subject": map[string]any{"mediaType": mtManifest, "digest": digest, "size": len(body)}})
	f.referrer(t, repo, digest, m, ArtifactNotation, api)
}

// rawNotationReferrer writes a Notary Project referrer of digest whose
// envelope is env, of mediaType (hostile: whatever a registry holds).
func (f *fakeRegistry) rawNotationReferrer(t testing.TB, repo, digest, mediaType string, env []byte) {
	t.Helper()
	ed := f.put("/v2/"+repo+"/blobs/"+digestOf("", env), mediaType, env)
	m := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "artifactType": ArtifactNotation,
		"config":  map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": digestOf("", []byte("{}")), "size": 2},
		"layers":  []any{map[string]any{"mediaType": mediaType, "digest": ed, "size": len(env)}},
		"subject": map[string]any{"mediaType": mtManifest, "digest": digest, "size": 1}})
	f.referrer(t, repo, digest, m, ArtifactNotation, true)
}

func newNotationWorld(t *testing.T, cfg Config, scope string, trusted ...*notary) *world {
	t.Helper()
	store, policy := trustDir(t, scope, trusted...)
	n, err := LoadNotation(store, policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Notation = n
	cfg.Route, cfg.Metrics, cfg.Log = "registry", NewMetrics(prometheus.NewRegistry()), slog.New(slog.DiscardHandler)
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{reg: newFakeRegistry(), v: v, m: cfg.Metrics}
	w.h = v.Wrap(w.reg, nil)
	return w
}

// TestNotationSignatures: a Notary Project signature (an OCI referrer of
// type application/vnd.cncf.notary.signature) by a certificate of the
// trust store verifies; before notation-go was wired in such a referrer
// was skipped and every image signed only with notation was "unsigned".
func TestNotationSignatures(t *testing.T) {
	good, other := newNotary(t, "good"), newNotary(t, "other")
	for _, tc := range notationCases(good, other) {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, good) })
	}
}

// notationCase is an image signed (or not) by sign and the verdict on
// its manifest under a trust policy for scope ("": every repository).
type notationCase struct {
	name   string
	scope  string
	sign   func(t *testing.T, w *world, d string)
	result string
	want   []string
}

// notationCases are TestNotationSignatures' cases: good is the notary
// the trust store holds, other one it does not.
func notationCases(good, other *notary) []notationCase {
	return []notationCase{
		{name: "referrers API", sign: func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, good, "team/app", d, true, false) }, result: ResultVerified},
		{name: "referrers tag schema", sign: func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, good, "team/app", d, false, false) }, result: ResultVerified},
		{name: "scope names the registry and repository", scope: "registry.example/team/app",
			sign: func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, good, "team/app", d, true, false) }, result: ResultVerified},
		{name: "unsigned", sign: func(*testing.T, *world, string) {}, result: ResultUnsigned, want: []string{"unsigned: no Notary Project signature"}},
		{name: "another CA", sign: func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, other, "team/app", d, true, false) },
			result: ResultInvalid, want: []string{"invalid signature", "Notary Project signature does not verify"}},
		{name: "tampered", sign: func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, good, "team/app", d, true, true) },
			result: ResultInvalid, want: []string{"invalid signature"}},
		{name: "no trust policy for the repository", scope: "registry.example/base/os",
			sign:   func(t *testing.T, w *world, d string) { w.reg.notationReferrer(t, good, "team/app", d, true, false) },
			result: ResultInvalid, want: []string{"no trust policy applies to registry.example/team/app@sha256:"}},
		{name: "garbage JWS envelope", sign: func(t *testing.T, w *world, d string) {
			w.reg.rawNotationReferrer(t, "team/app", d, mediaTypeJWS, []byte(`{"payload":"!!","signatures":[{}]}`))
		},
			result: ResultInvalid, want: []string{"invalid signature"}},
		{name: "garbage COSE envelope", sign: func(t *testing.T, w *world, d string) {
			w.reg.rawNotationReferrer(t, "team/app", d, mediaTypeCOSE, []byte{0xd2, 0x84, 0x40, 0xa0, 0xf6, 0x40})
		},
			result: ResultInvalid, want: []string{"invalid signature"}},
		{name: "envelope of another media type", sign: func(t *testing.T, w *world, d string) {
			w.reg.rawNotationReferrer(t, "team/app", d, "text/plain", []byte("x"))
		},
			result: ResultInvalid, want: []string{"want application/jose+json or application/cose"}},
		{name: "referrer without its envelope", sign: func(t *testing.T, w *world, d string) {
			m := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtManifest, "artifactType": ArtifactNotation,
				"config":  map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "digest": digestOf("", []byte("{}")), "size": 2},
				"subject": map[string]any{"mediaType": mtManifest, "digest": d, "size": 1}})
			w.reg.referrer(t, "team/app", d, m, ArtifactNotation, true)
		}, result: ResultInvalid, want: []string{"want one envelope layer and a subject"}},
		{name: "signature of another image", sign: func(t *testing.T, w *world, d string) {
			o := w.reg.pushImage(t, "team/app", "v2", "b")
			w.reg.notationReferrer(t, good, "team/app", o, true, false)
			w.reg.mu.Lock() // the other image's referrers listed as this one's
			w.reg.paths["/v2/team/app/referrers/"+d] = w.reg.paths["/v2/team/app/referrers/"+o]
			w.reg.mu.Unlock()
		}, result: ResultInvalid, want: []string{"invalid signature", "names the subject"}},
	}
}

// run pushes the image, signs it, and checks the verdict on its manifest
// and, once verified, on its layer.
func (tc notationCase) run(t *testing.T, good *notary) {
	t.Helper()
	scope := tc.scope
	if scope == "" {
		scope = "*"
	}
	w := newNotationWorld(t, Config{}, scope, good)
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	tc.sign(t, w, d)
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/v1")
	if facts.Signature != tc.result {
		t.Fatalf("signature %q, want %q (status %d %s)", facts.Signature, tc.result, rec.Code, rec.Body)
	}
	if tc.result != ResultVerified {
		denied(t, rec, tc.want...)
		return
	}
	if rec.Code != http.StatusOK || digestOf("", rec.Body.Bytes()) != d {
		t.Fatalf("status %d, want 200 with the manifest %s", rec.Code, d)
	}
	if rec, facts := w.get(t, http.MethodGet, "/v2/team/app/blobs/"+digestOf("", []byte("layera"))); rec.Code != http.StatusOK || facts.Signature != ResultVerified {
		t.Fatalf("the verified image's layer: %d %q", rec.Code, facts.Signature)
	}
}

// TestNotationDecisionsPersistAndFollowTheTrust: a notation decision is
// kept in the decisions file like a cosign one (a restart verifies
// nothing again) and holds only while the trust store and policy are
// the same: a changed trust store makes it be taken again.
func TestNotationDecisionsPersistAndFollowTheTrust(t *testing.T) {
	good, other := newNotary(t, "good"), newNotary(t, "other")
	path := filepath.Join(t.TempDir(), DecisionsFile)
	w := newNotationWorld(t, Config{DecisionsPath: path}, "*", good)
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.notationReferrer(t, good, "team/app", d, true, false)
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
		t.Fatalf("first pull: %d %s", rec.Code, rec.Body)
	}
	restart := func(ns ...*notary) {
		store, policy := trustDir(t, "*", ns...)
		n, err := LoadNotation(store, policy)
		if err != nil {
			t.Fatal(err)
		}
		v, err := New(Config{Route: "registry", Notation: n, DecisionsPath: path, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		w.h = v.Wrap(w.reg, nil)
	}
	restart(good) // the same trust, in another directory
	referrers := "/v2/team/app/referrers/" + d
	before := w.reg.count(referrers)
	if rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK || facts.Signature != ResultVerified {
		t.Fatalf("after restart: %d %q", rec.Code, facts.Signature)
	}
	if w.reg.count(referrers) != before {
		t.Fatal("a remembered notation decision read the referrers again")
	}
	restart(other) // the good root removed from the trust store
	if rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusForbidden || facts.Signature != ResultInvalid {
		t.Fatalf("after the trust store changed: %d %q, want 403 invalid", rec.Code, facts.Signature)
	}
}

// TestNotationAndCosignTogether: with both configured, either signature
// verifies an image.
func TestNotationAndCosignTogether(t *testing.T) {
	good := newNotary(t, "good")
	cosign := newSigner(t)
	w := newNotationWorld(t, Config{Keys: []Key{cosign.key}}, "*", good)
	a := w.reg.pushImage(t, "team/app", "v1", "a")
	b := w.reg.pushImage(t, "team/app", "v2", "b")
	c := w.reg.pushImage(t, "team/app", "v3", "c")
	w.reg.notationReferrer(t, good, "team/app", a, true, false)
	w.reg.signTag(t, cosign, "team/app", b, nil, false)
	for _, tc := range []struct {
		d    string
		code int
	}{{a, http.StatusOK}, {b, http.StatusOK}, {c, http.StatusForbidden}} {
		rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+tc.d)
		if rec.Code != tc.code {
			t.Fatalf("%s: %d %q, want %d", tc.d, rec.Code, facts.Signature, tc.code)
		}
	}
	rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+c)
	denied(t, rec, "no cosign signature", "nor Notary Project signature")
}

func TestLoadNotationErrors(t *testing.T) {
	good := newNotary(t, "good")
	store, policy := trustDir(t, "*", good)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	emptyStore := filepath.Join(dir, "empty")
	if err := os.MkdirAll(filepath.Join(emptyStore, "x509", "ca", "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	badCert := filepath.Join(dir, "bad")
	if err := os.MkdirAll(filepath.Join(badCert, "x509", "ca", "test"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("bad/x509/ca/test/root.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
	tests := []struct {
		name          string
		store, policy string
		want          string
	}{
		{name: "policy missing", store: store, policy: filepath.Join(dir, "missing.json"), want: "read notation trust policy"},
		{name: "policy not JSON", store: store, policy: write("garbage.json", "{version"), want: "invalid character"},
		{name: "policy invalid", store: store, policy: write("noversion.json", `{"trustPolicies":[]}`), want: "version"},
		{name: "store missing", store: filepath.Join(dir, "nostore"), policy: policy, want: "no such file or directory"},
		{name: "store is a file", store: policy, policy: policy, want: "not a directory"},
		{name: "named store empty", store: emptyStore, policy: policy, want: "no x509 certificates were found"},
		{name: "named store malformed", store: badCert, policy: policy, want: `trust policy "test"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadNotation(tc.store, tc.policy)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}
