package nodeconfig

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// Anchor picks, from the PEM of a fixed serving certificate file (leaf
// first, then its chain), what a node should trust: the last certificate
// of the chain when it is a CA. A file with no CA in it (a leaf alone)
// gives the leaf itself and pinned true: the node then trusts that one
// certificate, and a renewed certificate needs new node files.
func Anchor(chain []byte) (ca []byte, pinned bool, err error) {
	var last *pem.Block
	for rest := chain; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			last = blk
		}
	}
	if last == nil {
		return nil, false, errors.New("no CERTIFICATE block")
	}
	cert, err := x509.ParseCertificate(last.Bytes)
	if err != nil {
		return nil, false, err
	}
	return pem.EncodeToMemory(last), !cert.IsCA, nil
}
