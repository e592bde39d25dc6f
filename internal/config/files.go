package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// maxPEMFile bounds what is read from a certificate, key or CA bundle file.
const maxPEMFile = 4 << 20

// readFile reads the file that key name refers to, reporting a failure at
// that key.
func (p *parser) readFile(f fields, name, path string) ([]byte, bool) {
	if p.skipFiles {
		return nil, false
	}
	data, err := readBounded(path)
	if err != nil {
		p.errorf(f.keyLine(name), f.key(name), "cannot read %s: %s", path, err)
		return nil, false
	}
	return data, true
}

// readBounded reads path, a regular file (a FIFO or device would block or
// never end) of at most maxPEMFile bytes.
func readBounded(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, maxPEMFile+1))
	switch {
	case err != nil:
		return nil, unwrapPath(err)
	case len(data) > maxPEMFile:
		return nil, fmt.Errorf("larger than %d MiB, not a PEM file", maxPEMFile>>20)
	}
	return data, nil
}

// unwrapPath drops the operation and path from a *fs.PathError, which the
// messages already name: "no such file or directory".
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pemTypes returns the types of the PEM blocks in data.
func pemTypes(data []byte) []string {
	var types []string
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return types
		}
		types = append(types, b.Type)
	}
}

// hasPEM checks that data holds a PEM block whose type ends in want
// ("CERTIFICATE", "PRIVATE KEY"), with a hint if it holds the other kind.
func (p *parser) hasPEM(f fields, name, path string, data []byte, want string) bool {
	other := map[string]string{"CERTIFICATE": "PRIVATE KEY", "PRIVATE KEY": "CERTIFICATE"}[want]
	hint := ""
	for _, t := range pemTypes(data) {
		if strings.HasSuffix(t, want) {
			return true
		}
		if strings.HasSuffix(t, other) {
			hint = fmt.Sprintf(" (it holds a %s: are cert and key swapped?)", strings.ToLower(other))
		}
	}
	p.errorf(f.keyLine(name), f.key(name), "no PEM %s in %s%s", strings.ToLower(want), path, hint)
	return false
}

// checkKeyPair loads a certificate and its key as tls.LoadX509KeyPair
// would, reporting unreadable files, a mismatch and expiry. It returns the
// certificate, nil if anything is wrong.
func (p *parser) checkKeyPair(f fields, certName, keyName, certPath, keyPath string) *x509.Certificate {
	certPEM, certOK := p.readFile(f, certName, certPath)
	keyPEM, keyOK := p.readFile(f, keyName, keyPath)
	if !certOK || !keyOK {
		return nil
	}
	certOK = p.hasPEM(f, certName, certPath, certPEM, "CERTIFICATE")
	keyOK = p.hasPEM(f, keyName, keyPath, keyPEM, "PRIVATE KEY")
	if !certOK || !keyOK {
		return nil
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err != nil && strings.Contains(err.Error(), "does not match"):
		p.errorf(f.keyLine(certName), f.key(certName), "certificate does not match its key %s (%s)", keyPath, f.key(keyName))
		return nil
	case err != nil:
		p.errorf(f.keyLine(keyName), f.key(keyName), "cannot use %s with %s: %v", keyPath, certPath, err)
		return nil
	}
	if !p.notExpired(f, certName, pair.Leaf) {
		return nil
	}
	return pair.Leaf
}

// notExpired reports, at key name, a certificate past its NotAfter.
func (p *parser) notExpired(f fields, name string, c *x509.Certificate) bool {
	if c == nil || p.now.Before(c.NotAfter) {
		return true
	}
	p.errorf(f.keyLine(name), f.key(name), "certificate expired: NotAfter %s", c.NotAfter.UTC().Format(time.RFC3339))
	return false
}

// checkCA checks serve.ca_cert/ca_key: a matching pair whose certificate
// may sign certificates.
func (p *parser) checkCA(f fields, certPath, keyPath string) {
	c := p.checkKeyPair(f, "ca_cert", "ca_key", certPath, keyPath)
	switch {
	case c == nil:
	case !c.BasicConstraintsValid || !c.IsCA:
		p.errorf(f.keyLine("ca_cert"), f.key("ca_cert"),
			"%s is not a CA certificate (basic constraints CA:TRUE missing); create one with \"snigate ca init\", or use cert and key", certPath)
	case c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0:
		p.errorf(f.keyLine("ca_cert"), f.key("ca_cert"), "%s may not sign certificates (its key usage lacks certSign)", certPath)
	}
}

// checkCABundle checks a CA bundle: at least one PEM certificate, all
// parseable, not all expired.
func (p *parser) checkCABundle(f fields, name, path string) {
	data, ok := p.readFile(f, name, path)
	if !ok || !p.hasPEM(f, name, path, data, "CERTIFICATE") {
		return
	}
	var latest *x509.Certificate
	for i := 0; ; i++ {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			p.errorf(f.keyLine(name), f.key(name), "cannot parse PEM block %d of %s: %v", i+1, path, err)
			return
		}
		if latest == nil || c.NotAfter.After(latest.NotAfter) {
			latest = c
		}
	}
	if latest == nil {
		p.errorf(f.keyLine(name), f.key(name), "no PEM certificate in %s", path)
		return
	}
	p.notExpired(f, name, latest)
}
