package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
)

// patternBlob is a blob of any size made of one pattern repeated: the
// registry's large blob, served without ever being held in memory (only
// the pattern is). It is an io.ReaderAt, so each request reads it through
// its own io.SectionReader (offsets, Range requests).
type patternBlob struct {
	pattern []byte
	size    int64
}

// patternSize is the length of the repeated pattern.
const patternSize = 256 << 10

// newPatternBlob returns a blob of size bytes over a pseudo-random
// pattern (the same for every seed value, so runs are comparable).
func newPatternBlob(size int64, seed uint64) patternBlob {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 's', 'n', 'i', 'g', 'a', 't', 'e'})
	p := make([]byte, patternSize)
	rng.Read(p)
	return patternBlob{pattern: p, size: size}
}

// ReadAt copies the blob's bytes at off into b.
func (pb patternBlob) ReadAt(b []byte, off int64) (int, error) {
	if off >= pb.size {
		return 0, io.EOF
	}
	want := len(b)
	if rest := pb.size - off; int64(want) > rest {
		want = int(rest)
	}
	n := 0
	for n < want {
		i := (off + int64(n)) % int64(len(pb.pattern))
		n += copy(b[n:want], pb.pattern[i:])
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// reader returns a fresh reader over the whole blob.
func (pb patternBlob) reader() *io.SectionReader { return io.NewSectionReader(pb, 0, pb.size) }

// digest is the blob's sha256 digest ("sha256:HEX"), computed by reading
// it once (about a second per GiB).
func (pb patternBlob) digest() string {
	h := sha256.New()
	buf := make([]byte, patternSize)
	io.CopyBuffer(h, pb.reader(), buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// digestOf is the sha256 digest of b ("sha256:HEX").
func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
