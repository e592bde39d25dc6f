package config

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// VerifyNotation is routes[].http.verify.notation: Notary Project
// signatures; nil when absent.
type VerifyNotation struct {
	TrustStore  string // absolute path of the trust store directory (x509/ca/NAME/*.pem, ...)
	TrustPolicy string // absolute path of notation's trustpolicy.json
}

// notationStoreTypes are the trust store types of notation's layout
// (x509/<type>/<name>).
var notationStoreTypes = []string{"ca", "signingAuthority", "tsa"}

// notation parses verify.notation: both files readable, the policy a
// notation trust policy whose every trust store exists in the trust
// store directory with certificates. The gateway then loads both with
// notation-go, which checks the rest (scopes, identities, levels).
func (p *parser) notation(v fields) *VerifyNotation {
	n := v.get("notation")
	if n == nil {
		return nil
	}
	f := p.mapping(n, v.key("notation"), v.keyLine("notation"), "trust_store", "trust_policy")
	out := &VerifyNotation{TrustStore: p.pathAt(f, "trust_store"), TrustPolicy: p.pathAt(f, "trust_policy")}
	p.require(f, "trust_store", out.TrustStore != "", "the trust store directory, such as /etc/snigate/notation/truststore (x509/ca/NAME/*.pem)")
	p.require(f, "trust_policy", out.TrustPolicy != "", "notation's trust policy file, such as /etc/snigate/notation/trustpolicy.json")
	if p.skipFiles || out.TrustStore == "" || out.TrustPolicy == "" {
		return out
	}
	storeOK := true
	if fi, err := os.Stat(out.TrustStore); err != nil || !fi.IsDir() {
		msg := "not a directory"
		if err != nil {
			msg = unwrapPath(err).Error()
		}
		p.errorf(f.keyLine("trust_store"), f.key("trust_store"), "cannot read the trust store %s: %s", out.TrustStore, msg)
		storeOK = false
	}
	stores, err := readTrustPolicy(out.TrustPolicy)
	if err != nil {
		p.errorf(f.keyLine("trust_policy"), f.key("trust_policy"), "%s", err)
		return out
	}
	if !storeOK {
		return out
	}
	for _, s := range stores {
		if err := checkTrustStore(out.TrustStore, s); err != nil {
			p.errorf(f.keyLine("trust_store"), f.key("trust_store"), "%s", err)
		}
	}
	return out
}

// trustPolicyFile is the part of notation's trustpolicy.json checked here.
type trustPolicyFile struct {
	Version       string `json:"version"`
	TrustPolicies []struct {
		Name        string   `json:"name"`
		TrustStores []string `json:"trustStores"`
	} `json:"trustPolicies"`
}

// readTrustPolicy reads a trust policy and returns the trust stores its
// statements name ("ca:NAME"), each once.
func readTrustPolicy(path string) ([]string, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	var doc trustPolicyFile
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s is not a notation trust policy (JSON, {\"version\": \"1.0\", \"trustPolicies\": [...]}): %w", path, err)
	}
	switch {
	case doc.Version != "1.0":
		return nil, fmt.Errorf("%s: version %q, want \"1.0\"", path, doc.Version)
	case len(doc.TrustPolicies) == 0:
		return nil, fmt.Errorf("%s: no trustPolicies: one or more statements naming registryScopes and trustStores", path)
	}
	var out []string
	seen := map[string]bool{}
	for _, tp := range doc.TrustPolicies {
		for _, s := range tp.TrustStores {
			typ, name, ok := strings.Cut(s, ":")
			if !ok || !oneOf(typ, notationStoreTypes) || name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
				return nil, fmt.Errorf("%s: trust policy %q: trust store %q: want TYPE:NAME, TYPE one of %s", path, tp.Name, s, strings.Join(notationStoreTypes, ", "))
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// checkTrustStore reports a trust store ("ca:NAME") that has no
// directory x509/ca/NAME in dir, or whose files are not PEM certificates.
func checkTrustStore(dir, store string) error {
	typ, name, _ := strings.Cut(store, ":")
	sd := filepath.Join(dir, "x509", typ, name)
	entries, err := os.ReadDir(sd)
	if err != nil {
		return fmt.Errorf("the trust policy names the trust store %q: cannot read %s: %s", store, sd, unwrapPath(err))
	}
	certs := 0
	for _, e := range entries {
		p := filepath.Join(sd, e.Name())
		data, err := readBounded(p)
		if err != nil {
			return fmt.Errorf("trust store %q: cannot read %s: %w", store, p, err)
		}
		n, err := countCertificates(data)
		if err != nil {
			return fmt.Errorf("trust store %q: %s is not a PEM certificate: %w", store, p, err)
		}
		certs += n
	}
	if certs == 0 {
		return fmt.Errorf("the trust policy names the trust store %q: %s holds no certificate", store, sd)
	}
	return nil
}

// countCertificates counts the PEM certificates of data (at least one,
// nothing else).
func countCertificates(data []byte) (int, error) {
	n := 0
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return 0, fmt.Errorf("a %q PEM block", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return 0, err
		}
		n++
	}
	if n == 0 {
		return 0, errors.New("no PEM block")
	}
	return n, nil
}

func oneOf(s string, values []string) bool {
	for _, v := range values {
		if s == v {
			return true
		}
	}
	return false
}
