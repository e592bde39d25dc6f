package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snigate/snigate/names"
)

// File names InitCA writes in its directory.
const (
	CACertFileName = "ca.crt" // mode 0644
	CAKeyFileName  = "ca.key" // mode 0600, PKCS#8 EC P-256
)

// caValidityYears is the lifetime of a CA made by InitCA.
const caValidityYears = 10

// InitCAConfig configures InitCA (`snigate ca init`).
type InitCAConfig struct {
	Dir string // where ca.crt and ca.key go; created 0700 if missing; required
	// Names, if any, become the CA's X.509 name constraints (critical,
	// permitted DNS domains). X.509 reads a permitted "registry.example.com"
	// as that name and every name below it, at any depth; the Minter is
	// stricter and mints only for the name itself and exactly one label
	// below it (what "*.registry.example.com" matches). Without Names the
	// CA may sign for any name.
	Names []string
	Force bool             // overwrite existing files; false: refuse
	Now   func() time.Time // clock; nil: time.Now
}

// InitCA creates a CA for minted serving certificates: Dir/ca.crt and
// Dir/ca.key, an ECDSA P-256 key, valid 10 years, CA:TRUE with path length
// 0 (it signs leaves only). It refuses to overwrite either file unless
// Force. Both files are written to temporary names and renamed into place,
// so a failure leaves no half-written CA.
func InitCA(cfg InitCAConfig) error {
	if cfg.Dir == "" {
		return errors.New("ca init: want a directory (--out DIR)")
	}
	names, err := constraintNames(cfg.Names)
	if err != nil {
		return err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	certPath, keyPath := filepath.Join(cfg.Dir, CACertFileName), filepath.Join(cfg.Dir, CAKeyFileName)
	if !cfg.Force {
		if err := refuseExisting(certPath, keyPath); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	certPEM, keyPEM, err := newCA(names, cfg.Now())
	if err != nil {
		return fmt.Errorf("ca init: %w", err)
	}
	return writeFiles([]fileContent{{keyPath, keyPEM, 0o600}, {certPath, certPEM, 0o644}})
}

// constraintNames canonicalises and checks the --name values.
func constraintNames(in []string) ([]string, error) {
	var out []string
	for _, raw := range in {
		n := names.Canonical(strings.TrimSpace(raw))
		if base, wild := names.WildcardBase(n); wild {
			return nil, fmt.Errorf("ca init --name %q: give the name without \"*.\" (%s covers its one-label wildcards)", raw, base)
		}
		if err := names.CheckHost(n); err != nil {
			return nil, fmt.Errorf("ca init --name %q: %w", raw, err)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func refuseExisting(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("ca init: %s already exists; pass --force to overwrite it (nodes that trust the old CA must then be given the new ca.crt)", p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("ca init: %w", err)
		}
	}
	return nil
}

// newCA generates the key and the self-signed CA certificate, PEM encoded.
func newCA(names []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:                serial,
		Subject:                     pkix.Name{CommonName: caCommonName(names), Organization: []string{"snigate"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.AddDate(caValidityYears, 0, 0),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLen:                  0,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: len(names) > 0,
		PermittedDNSDomains:         names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign CA certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
}

func caCommonName(names []string) string {
	if len(names) == 0 {
		return "snigate gateway CA"
	}
	cn := "snigate gateway CA for " + strings.Join(names, " ")
	if len(cn) > 64 { // the X.520 upper bound of a CommonName
		cn = cn[:61] + "..."
	}
	return cn
}

type fileContent struct {
	path string
	data []byte
	mode fs.FileMode
}

// writeFiles writes each file to a temporary name in its directory, then
// renames them all into place; on error it removes what it wrote.
func writeFiles(files []fileContent) error {
	var tmps []string
	defer func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}()
	for _, f := range files {
		tmp, err := writeTemp(f)
		if err != nil {
			return fmt.Errorf("ca init: write %s: %w", f.path, err)
		}
		tmps = append(tmps, tmp)
	}
	for i, f := range files {
		if err := os.Rename(tmps[i], f.path); err != nil {
			return fmt.Errorf("ca init: %w", err)
		}
	}
	tmps = nil
	return nil
}

func writeTemp(f fileContent) (string, error) {
	t, err := os.CreateTemp(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp*")
	if err != nil {
		return "", err
	}
	_, err = t.Write(f.data)
	err = errors.Join(err, t.Chmod(f.mode), t.Sync(), t.Close())
	if err != nil {
		os.Remove(t.Name())
		return "", err
	}
	return t.Name(), nil
}
