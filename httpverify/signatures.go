package httpverify

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// Results of a decision: the audit record's signature field and the
// result label of snigate_verify_total.
const (
	ResultVerified = "verified" // a configured key signed the digest
	ResultUnsigned = "unsigned" // no signature for the digest (a blob: no verified manifest references it)
	ResultInvalid  = "invalid"  // signatures exist, none verifies with a configured key
	ResultSkipped  = "skipped"  // the repository is not among verify.repositories
	ResultError    = "error"    // the signatures could not be read (the registry failed): refused
)

// Results lists every result, for creating metric series.
var Results = []string{ResultVerified, ResultUnsigned, ResultInvalid, ResultSkipped, ResultError}

// outcome is what reading and checking a digest's signatures found.
type outcome struct {
	result string
	reason string   // why not verified, for the node and the log
	keys   []string // verified: the fingerprints of the keys that verified
}

// checker verifies one digest's signatures against the configured keys.
type checker struct {
	keys     []Key
	notation *Notation // nil: Notary Project signatures are not looked for
	f        fetcher
	repo     string
	dig      string
	registry string // the registry's name as the node asked for it, for the trust policy's scopes

	found   int   // signatures found
	invalid error // the first reason one did not verify
	readErr error // the first failure reading them
	keysOK  map[string]bool
}

// check reads and verifies every signature of dig in repo: the signature
// tag, then the referrers.
func (c *checker) check() outcome {
	c.keysOK = map[string]bool{}
	if len(c.keys) > 0 {
		c.tagForm()
	}
	if len(c.keysOK) == 0 {
		c.referrerForm()
	}
	switch {
	case len(c.keysOK) > 0:
		keys := make([]string, 0, len(c.keysOK))
		for _, k := range c.keys {
			if c.keysOK[k.Fingerprint] {
				keys = append(keys, k.Fingerprint)
			}
		}
		if c.notation != nil && c.keysOK[c.notation.Fingerprint] {
			keys = append(keys, c.notation.Fingerprint)
		}
		return outcome{result: ResultVerified, keys: keys}
	case c.found > 0:
		return outcome{result: ResultInvalid, reason: fmt.Sprintf("invalid signature: %v", c.invalid)}
	case c.readErr != nil:
		return outcome{result: ResultError, reason: fmt.Sprintf("its signatures could not be read: %v", c.readErr)}
	}
	return outcome{result: ResultUnsigned, reason: c.unsignedReason()}
}

// unsignedReason says which signatures were looked for.
func (c *checker) unsignedReason() string {
	cosign := "no cosign signature (tag " + tagOf(c.dig) + ".sig or an OCI referrer)"
	switch {
	case c.notation == nil:
		return "unsigned: " + cosign + " exists for it"
	case len(c.keys) == 0:
		return "unsigned: no Notary Project signature (an OCI referrer of type " + ArtifactNotation + ") exists for it"
	}
	return "unsigned: " + cosign + " nor Notary Project signature (an OCI referrer) exists for it"
}

// tagForm checks cosign's signature tag, sha256-<hex>.sig.
func (c *checker) tagForm() {
	m, err := c.f.manifest(c.repo, tagOf(c.dig)+".sig")
	if err != nil {
		c.readFailed(err)
		return
	}
	c.simpleSigningLayers(m)
}

// referrerForm checks the referrers of dig that are signatures.
func (c *checker) referrerForm() {
	refs, err := c.f.referrers(c.repo, c.dig)
	if err != nil {
		c.readFailed(err)
		return
	}
	tried := 0
	for _, d := range refs {
		kind := c.wanted(signatureKind(d.ArtifactType))
		if kind == "" {
			continue
		}
		if tried >= MaxSignatures || !c.more() {
			return
		}
		tried++
		m, err := c.f.manifest(c.repo, d.Digest)
		if err != nil {
			c.readFailed(err)
			continue
		}
		if m.Subject != nil && m.Subject.Digest != c.dig {
			c.found++ // a signature, of another image: invalid here
			c.bad(fmt.Errorf("the referrer %s names the subject %s", d.Digest, m.Subject.Digest))
			continue
		}
		switch kind {
		case "cosign":
			c.simpleSigningLayers(m)
		case "bundle":
			c.bundleLayers(m)
		case "notation":
			c.notationLayers(m)
		}
	}
}

// wanted is kind when signatures of that kind can verify here (cosign
// keys, a notation trust policy), else "".
func (c *checker) wanted(kind string) string {
	switch {
	case kind == "notation" && c.notation == nil,
		(kind == "cosign" || kind == "bundle") && len(c.keys) == 0:
		return ""
	}
	return kind
}

// notationLayers checks a Notary Project signature referrer: its one
// layer is the envelope, verified by notation-go against the trust
// policy for the subject (whose digest must be dig; the envelope's
// payload must name the same descriptor).
func (c *checker) notationLayers(m Manifest) {
	if len(m.Layers) != 1 || m.Subject == nil {
		c.found++
		c.bad(fmt.Errorf("a Notary Project signature of %d layers (subject: %t): want one envelope layer and a subject", len(m.Layers), m.Subject != nil))
		return
	}
	l := m.Layers[0]
	c.found++
	env, err := c.f.blob(c.repo, l.Digest)
	if err != nil {
		c.readFailed(err)
		return
	}
	subject := *m.Subject
	subject.Digest = c.dig
	ref := c.registry + "/" + c.repo + "@" + c.dig
	if err := c.notation.verify(c.f.node.Context(), subject, env, l.MediaType, ref); err != nil {
		c.bad(err)
		return
	}
	c.keysOK[c.notation.Fingerprint] = true
}

// simpleSigningLayers checks the layers of a cosign signature manifest:
// each a simple-signing payload signed in its annotation.
func (c *checker) simpleSigningLayers(m Manifest) {
	for _, l := range m.Layers {
		if !c.more() {
			return
		}
		sigB64, ok := l.Annotations[annotationSignature]
		if !ok {
			continue
		}
		c.found++
		sig, err := base64.StdEncoding.DecodeString(sigB64)
		if err != nil {
			c.bad(fmt.Errorf("the signature of layer %s is not base64", l.Digest))
			continue
		}
		payload, err := c.f.blob(c.repo, l.Digest)
		if err != nil {
			c.readFailed(err)
			continue
		}
		c.verifyPayload(sig, payload, func() error {
			d, err := ParseSimpleSigning(payload)
			if err == nil && d != c.dig {
				err = fmt.Errorf("the signed payload names %s", d)
			}
			return err
		})
	}
}

// bundleLayers checks the layers of a sigstore bundle referrer: a DSSE
// envelope over an in-toto statement whose subject is the digest.
func (c *checker) bundleLayers(m Manifest) {
	for _, l := range m.Layers {
		if !c.more() {
			return
		}
		c.found++
		b, err := c.f.blob(c.repo, l.Digest)
		if err != nil {
			c.readFailed(err)
			continue
		}
		env, err := parseBundle(b)
		if err != nil {
			c.bad(err)
			continue
		}
		msg := pae(env.PayloadType, env.Payload)
		for _, s := range env.Signatures {
			c.verifyPayload(s.Sig, msg, func() error { return c.subjectIs(env.Payload) })
		}
	}
}

// subjectIs checks that an in-toto statement names dig.
func (c *checker) subjectIs(payload []byte) error {
	ds, err := ParseStatement(payload)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d == c.dig {
			return nil
		}
	}
	return fmt.Errorf("the signed statement names %s, not this digest", ds[0])
}

// verifyPayload records which keys signed msg, once what it signs is
// checked (content: an error when it does not name the digest). A
// signature no key verifies is invalid: tampered, or by another key.
func (c *checker) verifyPayload(sig, msg []byte, content func() error) {
	var ok []string
	for _, k := range c.keys {
		if k.verify(sig, msg) {
			ok = append(ok, k.Fingerprint)
		}
	}
	if len(ok) == 0 {
		c.bad(errors.New("no configured key verifies it (tampered, or signed by another key)"))
		return
	}
	if err := content(); err != nil {
		c.bad(err)
		return
	}
	for _, fp := range ok {
		c.keysOK[fp] = true
	}
}

// more reports whether another signature is to be tried: none verified
// yet, and fewer than MaxSignatures tried for the digest (in every form
// together), so that a registry listing thousands costs a bounded
// number of reads.
func (c *checker) more() bool { return len(c.keysOK) == 0 && c.found < MaxSignatures }

func (c *checker) bad(err error) {
	if c.invalid == nil {
		c.invalid = err
	}
}

// readFailed notes a failure reading a signature; a 404 is no signature.
func (c *checker) readFailed(err error) {
	if !errors.Is(err, errNotFound) && c.readErr == nil {
		c.readErr = err
	}
}
