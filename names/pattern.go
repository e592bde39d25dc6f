package names

import (
	"fmt"
	"strings"
)

// wildcardPrefix starts a wildcard pattern.
const wildcardPrefix = "*."

// CheckPattern returns what makes pattern not a route pattern, nil if it
// is one: an exact host name (CheckHost), or "*." followed by a host name
// with room for one more label below it. Case does not matter and one
// trailing dot is ignored. The error says what to change.
func CheckPattern(pattern string) error {
	base, wild := WildcardBase(Canonical(pattern))
	if !wild {
		return CheckHost(pattern)
	}
	if err := CheckHost(base); err != nil {
		return fmt.Errorf("after \"*.\": %w", err)
	}
	if len(base) > MaxLen-2 {
		return fmt.Errorf("%d bytes after \"*.\": no name one label below it fits in %d bytes", len(base), MaxLen)
	}
	return nil
}

// WildcardBase returns, for a wildcard pattern "*.example.com", the name
// below which it matches ("example.com") and true; for anything else "",
// false. It does not check or canonicalise the pattern.
func WildcardBase(pattern string) (string, bool) {
	base, ok := strings.CutPrefix(pattern, wildcardPrefix)
	if !ok {
		return "", false
	}
	return base, true
}

// Match reports whether name matches pattern: name is a valid host name
// (IsHost) and, ignoring case and one trailing dot on either, equals an
// exact pattern or is one label below the base of a wildcard pattern
// ("a.example.com" for "*.example.com"; not "example.com", not
// "a.b.example.com"). An invalid name matches nothing.
func Match(pattern, name string) bool {
	if !IsHost(name) {
		return false
	}
	name, pattern = Canonical(name), Canonical(pattern)
	if base, wild := WildcardBase(pattern); wild {
		return parent(name) == base
	}
	return name == pattern
}

// parent returns name without its first label, "" for a one-label name.
// name must be a valid canonical host name.
func parent(name string) string {
	_, p, _ := strings.Cut(name, ".")
	return p
}
