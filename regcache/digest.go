package regcache

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
)

// ErrBadDigest is matched (errors.Is) by the error of a digest the cache
// cannot address: not "sha256:" and 64 lowercase hex digits, nor "sha512:"
// and 128. The caller serves such a request from upstream.
var ErrBadDigest = errors.New("regcache: not a sha256 or sha512 digest")

// digest is a parsed, valid content digest.
type digest struct {
	algo string // "sha256" or "sha512"
	hex  string // lowercase, 64 or 128 digits
}

// hexLen is the number of hex digits of each algorithm the cache stores.
var hexLen = map[string]int{"sha256": 64, "sha512": 128}

// parseDigest parses an OCI digest such as "sha256:9f86d0...". Only
// lowercase hex is accepted (the OCI spec's form), so every digest has one
// file name.
func parseDigest(s string) (digest, error) {
	algo, hx, ok := strings.Cut(s, ":")
	n, known := hexLen[algo]
	if !ok || !known || len(hx) != n || strings.Trim(hx, "0123456789abcdef") != "" {
		return digest{}, fmt.Errorf("%w: %.80q", ErrBadDigest, s)
	}
	return digest{algo: algo, hex: hx}, nil
}

// String is the digest in OCI form, "sha256:<hex>".
func (d digest) String() string { return d.algo + ":" + d.hex }

// newHash returns a fresh hash of the digest's algorithm.
func (d digest) newHash() hash.Hash {
	if d.algo == "sha512" {
		return sha512.New()
	}
	return sha256.New()
}

// matches reports whether sum (a finished hash) is this digest.
func (d digest) matches(sum []byte) bool {
	return hex.EncodeToString(sum) == d.hex
}
