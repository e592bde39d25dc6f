package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/notaryproject/notation-go"
	notationreg "github.com/notaryproject/notation-go/registry"
	notationsigner "github.com/notaryproject/notation-go/signer"
	"oras.land/oras-go/v2/registry/remote"
)

// verifyNotationHost is route "verifynotation": http.verify with a
// notation trust store and policy only.
const verifyNotationHost = "verifynotation.registry.example.test"

// TestVerifyNotation: an image signed with a Notary Project signature
// (notation-go's signer and its registry client, which pushes the
// signature as an OCI referrer: docker-registry has no referrers API, so
// by the referrers tag schema) pulls through a route whose verify has
// only notation; an unsigned image is refused saying no Notary Project
// signature exists. (The notation CLI is not served by the module proxy
// here: notation-go's own signer signs, as `notation sign` does.)
func TestVerifyNotation(t *testing.T) {
	w := getWorld(t)
	signed, err := w.pushVerifyImage(t, "e2e/vnotation")
	if err != nil {
		t.Fatal(err)
	}
	unsigned, err := w.pushVerifyImage(t, "e2e/vnotation-unsigned")
	if err != nil {
		t.Fatal(err)
	}
	root, leaf, key := notationCerts(t)
	w.notationSign(t, signed, key, leaf, root)
	store, policy := w.notationTrust(t, root)
	if err := w.ctrd.trust(verifyNotationHost, filepath.Join(w.gatewayCerts, "ca.crt")); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(w.dir, "verify-notation-audit.log")
	var b strings.Builder
	w.spec.bridgeRoute(&b, "verifynotation", verifyNotationHost, "", fmt.Sprintf(`      server_name: %q
    http:
      audit_log: %s
      verify:
        notation: {trust_store: %s, trust_policy: %s}
`, registryHost, audit, store, policy))
	spec := w.spec
	spec.extra = b.String()
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })

	if r := w.pullVerify(t, verifyNotationHost, signed.repo); r.err != nil {
		t.Fatalf("pull of the notation-signed image:\n%s", r)
	}
	rec := waitVerifyAudit(t, audit, func(r verifyRecord) bool {
		return r.Route == "verifynotation" && r.Repository == signed.repo && r.Kind == "manifest" && r.Status == http.StatusOK
	})
	if rec.Signature != "verified" {
		t.Errorf("audit of the notation-signed pull: signature %q, want verified", rec.Signature)
	}
	ref := verifyNotationHost + "/" + signed.repo + ":1"
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	defer runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	if r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref)); r.err != nil {
		t.Fatalf("ctr pull of the notation-signed image:\n%s", r)
	}
	refusedWith(t, w.pullVerify(t, verifyNotationHost, unsigned.repo), unsigned, "unsigned: no Notary Project signature")
}

// notationCerts is a root CA and a code-signing leaf it issued (ECDSA
// P-256), as `notation cert generate-test` makes.
func notationCerts(t *testing.T) (root, leaf *x509.Certificate, key *ecdsa.PrivateKey) {
	t.Helper()
	rootKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rt := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e notation root", Organization: []string{"snigate e2e"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, rt, rt, &rootKey.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	root, _ = x509.ParseCertificate(der)
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	lt := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "e2e signer", Organization: []string{"snigate e2e"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}
	der, err = x509.CreateCertificate(rand.Reader, lt, root, &key.PublicKey, rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ = x509.ParseCertificate(der)
	return root, leaf, key
}

// notationSign signs img on registry A with notation-go, from the
// bastion namespace with the edge identity.
func (w *world) notationSign(t *testing.T, img signedImage, key *ecdsa.PrivateKey, chain ...*x509.Certificate) {
	t.Helper()
	s, err := notationsigner.NewGenericSigner(key, chain)
	if err != nil {
		t.Fatal(err)
	}
	ref := registryAAddr + "/" + img.repo + "@" + img.digest
	repo, err := remote.NewRepository(ref)
	if err != nil {
		t.Fatal(err)
	}
	cfg := w.edgeTLS(t)
	cfg.ServerName = hostOf(registryAAddr)
	repo.Client = &http.Client{Timeout: cmdTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var c net.Conn
			err := w.bastion.do(func() error {
				var err error
				c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
		TLSClientConfig: cfg,
	}}
	_, err = notation.Sign(context.Background(), s, notationreg.NewRepository(repo), notation.SignOptions{
		SignerSignOptions: notation.SignerSignOptions{SignatureMediaType: "application/jose+json"}, ArtifactReference: ref})
	if err != nil {
		t.Fatalf("notation sign %s: %v", ref, err)
	}
}

// notationTrust writes a trust store (x509/ca/e2e/root.pem) and a trust
// policy for the route's name and the image's repositories.
func (w *world) notationTrust(t *testing.T, root *x509.Certificate) (store, policy string) {
	t.Helper()
	dir := filepath.Join(w.dir, "notation")
	store = filepath.Join(dir, "truststore")
	ca := filepath.Join(store, "x509", "ca", "e2e")
	if err := os.MkdirAll(ca, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ca, "root.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	policy = filepath.Join(dir, "trustpolicy.json")
	doc := fmt.Sprintf(`{"version":"1.0","trustPolicies":[{"name":"e2e","registryScopes":["%[1]s/e2e/vnotation","%[1]s/e2e/vnotation-unsigned"],`+
		`"signatureVerification":{"level":"strict"},"trustStores":["ca:e2e"],"trustedIdentities":["*"]}]}`, verifyNotationHost)
	if err := os.WriteFile(policy, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return store, policy
}
