package httpverify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/dir"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ArtifactNotation is the artifact type of a Notary Project signature,
// an OCI 1.1 referrer whose layer is a JWS or COSE envelope.
const ArtifactNotation = "application/vnd.cncf.notary.signature"

// Envelope media types of a Notary Project signature's layer.
const (
	mediaTypeJWS  = "application/jose+json"
	mediaTypeCOSE = "application/cose"
)

// Notation verifies Notary Project signatures with notation-go's
// verifier against a trust store and a trust policy
// (routes[].http.verify.notation).
type Notation struct {
	// Fingerprint is "notation:sha256:" and the hex SHA-256 of the trust
	// policy and every file of the trust store: what a decision records
	// of the trust that made it, so that any change of either makes the
	// decisions it made be taken again.
	Fingerprint string
	v           notation.Verifier
}

// LoadNotation reads a trust store (a directory laid out as notation's:
// x509/ca/NAME/*.pem, x509/signingAuthority/NAME/*.pem,
// x509/tsa/NAME/*.pem) and a trust policy file (notation's
// trustpolicy.json, version 1.0), and checks them as notation does.
// The certificates are read again by each verification; the fingerprint
// is of the files read now.
func LoadNotation(trustStore, trustPolicy string) (*Notation, error) {
	doc, polBytes, err := loadTrustPolicy(trustPolicy)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(trustStore)
	if err != nil {
		return nil, fmt.Errorf("notation trust store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("notation trust store %s: not a directory", trustStore)
	}
	ts := truststore.NewX509TrustStore(storeFS{FS: os.DirFS(trustStore), root: trustStore})
	if err := checkTrustStores(doc, ts); err != nil {
		return nil, fmt.Errorf("notation trust store %s: %w", trustStore, err)
	}
	fp, err := trustFingerprint(polBytes, trustStore)
	if err != nil {
		return nil, err
	}
	v, err := verifier.NewWithOptions(doc, ts, nil, verifier.VerifierOptions{})
	if err != nil {
		return nil, fmt.Errorf("notation verifier: %w", err)
	}
	return &Notation{Fingerprint: fp, v: v}, nil
}

// loadTrustPolicy reads and validates a trust policy file.
func loadTrustPolicy(path string) (*trustpolicy.Document, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read notation trust policy: %w", err)
	}
	var doc trustpolicy.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("notation trust policy %s: %w", path, err)
	}
	if err := doc.Validate(); err != nil {
		return nil, nil, fmt.Errorf("notation trust policy %s: %w", path, err)
	}
	return &doc, b, nil
}

// checkTrustStores reads the certificates of every trust store the policy
// names, so that a missing or malformed one is a configuration error and
// not a refusal of every image.
func checkTrustStores(doc *trustpolicy.Document, ts truststore.X509TrustStore) error {
	for _, p := range doc.TrustPolicies {
		for _, s := range p.TrustStores {
			typ, name, _ := strings.Cut(s, ":")
			if _, err := ts.GetCertificates(context.Background(), truststore.Type(typ), name); err != nil {
				return fmt.Errorf("trust policy %q: %w", p.Name, err)
			}
		}
	}
	return nil
}

// trustFingerprint hashes the trust policy and the trust store's files
// (names and contents, in order).
func trustFingerprint(policy []byte, store string) (string, error) {
	h := sha256.New()
	h.Write(policy)
	var files []string
	err := filepath.WalkDir(store, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("notation trust store: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("notation trust store: %w", err)
		}
		rel, _ := filepath.Rel(store, f)
		fmt.Fprintf(h, "\x00%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return "notation:sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// storeFS is the trust store directory as notation-go's SysFS: it asks
// for "truststore/x509/<type>/<name>", which is "x509/<type>/<name>" in
// the directory the configuration names.
type storeFS struct {
	fs.FS
	root string
}

func (s storeFS) SysPath(items ...string) (string, error) {
	p := path.Join(items...)
	if rest, ok := strings.CutPrefix(p, dir.TrustStoreDir+"/"); ok {
		p = rest
	}
	return filepath.Join(s.root, filepath.FromSlash(p)), nil
}

// verify checks a signature envelope (of mediaType) of subject, an
// artifact of ref (registry/repository@digest, which the trust policy's
// registryScopes match).
func (n *Notation) verify(ctx context.Context, subject Descriptor, envelope []byte, mediaType, ref string) (err error) {
	defer func() { // the envelope is the registry's: a parser's panic is this signature's failure, not the daemon's
		if p := recover(); p != nil {
			err = fmt.Errorf("the Notary Project signature does not parse: %v", p)
		}
	}()
	if mediaType != mediaTypeJWS && mediaType != mediaTypeCOSE {
		return fmt.Errorf("a Notary Project signature of media type %q, want %s or %s", bound(mediaType), mediaTypeJWS, mediaTypeCOSE)
	}
	desc := ocispec.Descriptor{MediaType: subject.MediaType, Digest: godigest.Digest(subject.Digest), Size: subject.Size}
	_, err = n.v.Verify(ctx, desc, envelope, notation.VerifierVerifyOptions{ArtifactReference: ref, SignatureMediaType: mediaType})
	if err != nil {
		var noPolicy notation.ErrorNoApplicableTrustPolicy
		if errors.As(err, &noPolicy) {
			return fmt.Errorf("no trust policy applies to %s: %w", bound(ref), err)
		}
		return fmt.Errorf("the Notary Project signature does not verify: %w", err)
	}
	return nil
}
