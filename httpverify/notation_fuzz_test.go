package httpverify

import (
	"bytes"
	"context"
	"testing"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzNotationEnvelope: a Notary Project envelope from the registry
// (untrusted) never panics the verifier and never verifies unless it is
// the one the trusted certificate signed.
func FuzzNotationEnvelope(f *testing.F) {
	good := newNotary(f, "fuzz")
	store, policy := trustDir(f, "*", good)
	n, err := LoadNotation(store, policy)
	if err != nil {
		f.Fatal(err)
	}
	digest := digestOf("", []byte("manifest"))
	subject := Descriptor{MediaType: mtManifest, Digest: digest, Size: 8}
	signed := good.sign(f, ocispec.Descriptor{MediaType: mtManifest, Digest: godigest.Digest(digest), Size: 8})
	f.Add(signed, false)
	f.Add(signed[:len(signed)/2], false)
	f.Add([]byte(`{"payload":"e30","protected":"e30","header":{"x5c":["AA=="]},"signature":"AA"}`), false)
	f.Add([]byte{0xd2, 0x84, 0x43, 0xa1, 0x01, 0x26, 0xa0, 0x40, 0x40}, true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, env []byte, cose bool) {
		mt := mediaTypeJWS
		if cose {
			mt = mediaTypeCOSE
		}
		err := n.verify(context.Background(), subject, env, mt, "registry.example/team/app@"+digest)
		if err == nil && (cose || !bytes.Equal(env, signed)) {
			t.Fatalf("an envelope other than the signed one verified: %q", env)
		}
	})
}
