package s3tier

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
)

// digest is a parsed content digest: algorithm and lower-case hex.
type digest struct{ algo, hex string }

var errDigest = errors.New("s3tier: not a sha256 or sha512 digest")

func parseDigest(s string) (digest, error) {
	algo, h, ok := strings.Cut(s, ":")
	want := map[string]int{"sha256": 64, "sha512": 128}[algo]
	if !ok || want == 0 || len(h) != want || strings.Trim(h, "0123456789abcdef") != "" {
		return digest{}, errDigest
	}
	return digest{algo, h}, nil
}

func (d digest) String() string { return d.algo + ":" + d.hex }

func (d digest) newHash() hash.Hash {
	if d.algo == "sha512" {
		return sha512.New()
	}
	return sha256.New()
}

func (d digest) matches(h hash.Hash) bool { return hex.EncodeToString(h.Sum(nil)) == d.hex }

// objectKey is the content's key: PREFIX/sha256/ab/abcdef...
func (t *Tier) objectKey(d digest) string {
	return t.cfg.Prefix + d.algo + "/" + d.hex[:2] + "/" + d.hex
}

// leaseKey is the key of the lease of a fill of d: PREFIX/leases/sha256/abcdef...
func (t *Tier) leaseKey(d digest) string { return t.cfg.Prefix + "leases/" + d.algo + "/" + d.hex }

// takeoverKey is the marker a waiter creates to take over d's lease whose
// ETag is etag: PREFIX/leases/sha256/abcdef....takeover-<16 hex of the ETag>.
func (t *Tier) takeoverKey(d digest, etag string) string {
	sum := sha256.Sum256([]byte(strings.Trim(etag, `"`)))
	return t.leaseKey(d) + ".takeover-" + hex.EncodeToString(sum[:8])
}
