package httpbridge

import (
	"testing"

	"golang.org/x/net/http2"
)

// FuzzResetGuard: no panic on any byte stream; the bytes passed are a
// prefix of each read, all of it until the guard trips, none after.
func FuzzResetGuard(f *testing.F) {
	f.Add([]byte(http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"), 9)
	f.Add([]byte(http2.ClientPreface+"\x00\x00\x01\x01\x05\x00\x00\x00\x01\x82\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x08"), 3)
	f.Fuzz(func(t *testing.T, b []byte, step int) {
		if step <= 0 || step > len(b)+1 {
			step = len(b) + 1
		}
		tripped := false
		g := newResetGuard(func(string) { tripped = true })
		for i := 0; i < len(b); i += step {
			chunk := b[i:min(i+step, len(b))]
			was := tripped
			n := g.pass(chunk)
			switch {
			case n < 0 || n > len(chunk):
				t.Fatalf("passed %d of %d bytes", n, len(chunk))
			case was && n != 0:
				t.Fatalf("passed %d bytes after tripping", n)
			case !tripped && n != len(chunk):
				t.Fatalf("passed %d of %d bytes without tripping", n, len(chunk))
			}
		}
	})
}
