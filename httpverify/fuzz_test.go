package httpverify

import (
	"testing"

	"github.com/snigate/snigate/oci"
)

const fuzzDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// FuzzParseSimpleSigning: no panic; a payload that parses names a valid
// digest.
func FuzzParseSimpleSigning(f *testing.F) {
	for _, s := range []string{
		string(simplePayload("team/app", fuzzDigest)),
		`{"critical":{"image":{"docker-manifest-digest":"sha256:00"},"type":"cosign container image signature"}}`,
		`{"critical":{"type":"other"}}`, `{"critical":null}`, `[]`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseSimpleSigning(b)
		if err != nil {
			return
		}
		if !oci.ValidDigest(d) {
			t.Fatalf("%q parsed as %q", b, d)
		}
	})
}

// FuzzParseStatement: no panic; every subject digest returned is valid.
func FuzzParseStatement(f *testing.F) {
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"` + fuzzDigest[7:] + `"}}]}`))
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"md5":"00"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := ParseStatement(b)
		if err != nil {
			return
		}
		for _, d := range ds {
			if !oci.ValidDigest(d) {
				t.Fatalf("%q gave the digest %q", b, d)
			}
		}
	})
}

// FuzzParseManifest: no panic on a manifest or referrers index from the
// registry; every descriptor kept has a valid digest, within the limits.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` +
			fuzzDigest + `","size":1,"artifactType":"` + ArtifactCosign + `"}]}`,
		`{"schemaVersion":2,"config":{"digest":"` + fuzzDigest + `"},"layers":[{"digest":"` + fuzzDigest +
			`","annotations":{"dev.cosignproject.cosign/signature":"AA=="}}],"subject":{"digest":"` + fuzzDigest + `"}}`,
		`{"manifests":[{"digest":"sha256:xyz"}]}`, `{"subject":{"digest":""}}`, `null`, `{"layers":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if len(m.Layers) > MaxDescriptors || len(m.Manifests) > MaxDescriptors {
			t.Fatalf("%d layers, %d manifests kept", len(m.Layers), len(m.Manifests))
		}
		for _, d := range append(m.Blobs(), m.Children()...) {
			if !oci.ValidDigest(d) {
				t.Fatalf("%q kept the digest %q", b, d)
			}
		}
		for _, d := range m.Manifests {
			_ = signatureKind(d.ArtifactType)
		}
	})
}
