package pki

import (
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"time"
)

// CRL returns a PEM X509 CRL signed by a that revokes the certificates
// given, valid from a minute ago for a day, with CRL number number.
func (a *Authority) CRL(number int64, revoked ...*x509.Certificate) ([]byte, error) {
	now := time.Now()
	tmpl := &x509.RevocationList{
		Number:     big.NewInt(number),
		ThisUpdate: now.Add(-time.Minute),
		NextUpdate: now.Add(24 * time.Hour),
	}
	for _, c := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: c.SerialNumber, RevocationTime: now.Add(-time.Minute)})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, a.Cert, a.Key)
	if err != nil {
		return nil, err
	}
	return pemBlock("X509 CRL", der), nil
}
