package regcache

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseDigest(t *testing.T) {
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte("x")))
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{name: "sha256", in: "sha256:" + sum, ok: true},
		{name: "sha512", in: "sha512:" + strings.Repeat("ab", 64), ok: true},
		{name: "upper case hex", in: "sha256:" + strings.ToUpper(sum)},
		{name: "short", in: "sha256:" + sum[:63]},
		{name: "long", in: "sha256:" + sum + "0"},
		{name: "no algorithm", in: sum},
		{name: "unknown algorithm", in: "md5:" + sum[:32]},
		{name: "path traversal", in: "sha256:../../" + sum[6:]},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseDigest(tt.in)
			if tt.ok {
				if err != nil || d.String() != tt.in {
					t.Fatalf("parseDigest(%q) = %v, %v", tt.in, d, err)
				}
				return
			}
			if !errors.Is(err, ErrBadDigest) {
				t.Fatalf("parseDigest(%q) error = %v, want ErrBadDigest", tt.in, err)
			}
		})
	}
}

func TestDigestMatches(t *testing.T) {
	d, err := parseDigest(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("x"))))
	if err != nil {
		t.Fatal(err)
	}
	h := d.newHash()
	h.Write([]byte("x"))
	if !d.matches(h.Sum(nil)) {
		t.Fatal("the sum of the content does not match its digest")
	}
	h.Write([]byte("y"))
	if d.matches(h.Sum(nil)) {
		t.Fatal("the sum of other content matches the digest")
	}
}

// FuzzParseDigest: digests come from clients' paths. Whatever is
// accepted is exactly "<algo>:<lowercase hex of its length>" and names a
// file inside the cache's directory.
func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{"sha256:" + strings.Repeat("a", 64), "sha512:" + strings.Repeat("0", 128),
		"sha256:../" + strings.Repeat("a", 61), "sha256:", ":", "sha256:A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDigest(s)
		if err != nil {
			return
		}
		if d.String() != s || len(d.hex) != hexLen[d.algo] || strings.ContainsAny(d.hex, "./\\") {
			t.Fatalf("parseDigest(%q) accepted %+v", s, d)
		}
	})
}
