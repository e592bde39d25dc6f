package httpverify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/snigate/snigate/oci"
)

// MaxPayload is the largest signature payload (a simple-signing JSON, a
// sigstore bundle) read from the registry.
const MaxPayload = 256 << 10

// simpleSigningType is the critical.type of cosign's payload.
const simpleSigningType = "cosign container image signature"

// errPayload is wrapped by every payload that does not parse.
var errPayload = errors.New("malformed signature payload")

// simpleSigning is the part of cosign's simple-signing payload that
// matters: what it signs.
type simpleSigning struct {
	Critical *struct {
		Type  string `json:"type"`
		Image *struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
	} `json:"critical"`
}

// ParseSimpleSigning returns the manifest digest a cosign simple-signing
// payload (the signature tag's layer, a legacy referrer's layer) signs.
func ParseSimpleSigning(b []byte) (string, error) {
	if len(b) > MaxPayload {
		return "", fmt.Errorf("%w: %d bytes, more than %d", errPayload, len(b), MaxPayload)
	}
	var p simpleSigning
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%w: %w", errPayload, err)
	}
	switch {
	case p.Critical == nil || p.Critical.Image == nil:
		return "", fmt.Errorf("%w: no critical.image", errPayload)
	case !strings.EqualFold(p.Critical.Type, simpleSigningType):
		return "", fmt.Errorf("%w: critical.type %q, want %q", errPayload, bound(p.Critical.Type), simpleSigningType)
	case !oci.ValidDigest(p.Critical.Image.DockerManifestDigest):
		return "", fmt.Errorf("%w: critical.image.docker-manifest-digest %q is not a digest", errPayload, bound(p.Critical.Image.DockerManifestDigest))
	}
	return p.Critical.Image.DockerManifestDigest, nil
}

// statement is the in-toto statement of a DSSE envelope: its subjects.
type statement struct {
	Type    string `json:"_type"`
	Subject []struct {
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
	PredicateType string `json:"predicateType"`
}

// ParseStatement returns the digests ("sha256:<hex>") an in-toto
// statement's subjects name.
func ParseStatement(b []byte) ([]string, error) {
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errPayload, len(b), MaxPayload)
	}
	var s statement
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %w", errPayload, err)
	}
	if !strings.HasPrefix(s.Type, "https://in-toto.io/Statement/") {
		return nil, fmt.Errorf("%w: _type %q is not an in-toto statement", errPayload, bound(s.Type))
	}
	var out []string
	for _, sub := range s.Subject {
		for alg, hex := range sub.Digest {
			if d := alg + ":" + hex; oci.ValidDigest(d) {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the statement names no subject digest", errPayload)
	}
	return out, nil
}

// envelope is a DSSE envelope (the sigstore bundle's dsseEnvelope).
type envelope struct {
	Payload     []byte `json:"payload"` // base64 in JSON
	PayloadType string `json:"payloadType"`
	Signatures  []struct {
		Sig []byte `json:"sig"`
	} `json:"signatures"`
}

// bundle is the part of a sigstore bundle (v0.1 to v0.3) a key-based
// image signature uses.
type bundle struct {
	MediaType    string    `json:"mediaType"`
	DSSEEnvelope *envelope `json:"dsseEnvelope"`
}

// parseBundle returns a sigstore bundle's DSSE envelope.
func parseBundle(b []byte) (*envelope, error) {
	if len(b) > MaxPayload {
		return nil, fmt.Errorf("%w: bundle of %d bytes, more than %d", errPayload, len(b), MaxPayload)
	}
	var bu bundle
	if err := json.Unmarshal(b, &bu); err != nil {
		return nil, fmt.Errorf("%w: bundle: %w", errPayload, err)
	}
	if !strings.HasPrefix(bu.MediaType, "application/vnd.dev.sigstore.bundle") {
		return nil, fmt.Errorf("%w: bundle mediaType %q", errPayload, bound(bu.MediaType))
	}
	if bu.DSSEEnvelope == nil || len(bu.DSSEEnvelope.Signatures) == 0 {
		return nil, fmt.Errorf("%w: the bundle has no DSSE envelope with a signature", errPayload)
	}
	return bu.DSSEEnvelope, nil
}

// pae is DSSE's pre-authentication encoding of a payload: what its
// signatures sign.
func pae(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(payload)))
	b.WriteByte(' ')
	b.Write(payload)
	return b.Bytes()
}

// bound cuts s, which came from the registry, for a message.
func bound(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
