package httpverify

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"strings"
)

// digestOf is b's digest in the algorithm of like ("sha512:..." gives
// sha512, anything else sha256).
func digestOf(like string, b []byte) string {
	var h hash.Hash = sha256.New()
	alg := "sha256"
	if strings.HasPrefix(like, "sha512:") {
		h, alg = sha512.New(), "sha512"
	}
	h.Write(b)
	return alg + ":" + hex.EncodeToString(h.Sum(nil))
}

// digestMatches reports whether b is the content of digest.
func digestMatches(digest string, b []byte) bool { return digestOf(digest, b) == digest }
