package sni

import (
	"fmt"
	"strings"
)

// NameTable maps server names to values: exact names, and wildcards of the
// form "*.example.com" that match exactly one label, as in certificates.
// Matching is case-insensitive and ignores a trailing dot; an exact name
// beats a wildcard. The zero value is an empty table. A NameTable is not
// safe for concurrent mutation; build it once, then share it read-only.
type NameTable[V any] struct {
	exact    map[string]V
	wildcard map[string]V // keyed by the suffix after "*.", e.g. "example.com"
}

// CanonicalName lowercases name and strips one trailing dot.
func CanonicalName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// ValidatePattern reports whether pattern is an exact name or a one-label
// wildcard ("*.example.com"), with what is wrong if not.
func ValidatePattern(pattern string) error {
	p := CanonicalName(pattern)
	if p == "" {
		return fmt.Errorf("empty name")
	}
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		p = rest
	}
	if len(p) > 253 {
		return fmt.Errorf("name longer than 253 characters")
	}
	for _, label := range strings.Split(p, ".") {
		if err := validLabel(label); err != nil {
			return fmt.Errorf("%q: %w (a wildcard is allowed only as a whole leading label, as in \"*.example.com\")", pattern, err)
		}
	}
	return nil
}

func validLabel(label string) error {
	if label == "" {
		return fmt.Errorf("empty label")
	}
	if len(label) > 63 {
		return fmt.Errorf("label longer than 63 characters")
	}
	for _, c := range label {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("invalid character %q", c)
		}
	}
	return nil
}

// Add maps pattern to v. It reports false, and changes nothing, if the
// canonical pattern is already in the table.
func (t *NameTable[V]) Add(pattern string, v V) bool {
	p := CanonicalName(pattern)
	m := &t.exact
	if rest, ok := strings.CutPrefix(p, "*."); ok {
		p, m = rest, &t.wildcard
	}
	if *m == nil {
		*m = make(map[string]V)
	}
	if _, dup := (*m)[p]; dup {
		return false
	}
	(*m)[p] = v
	return true
}

// Lookup returns the value for name: the exact entry if there is one, else
// the wildcard covering name's first label.
func (t *NameTable[V]) Lookup(name string) (V, bool) {
	n := CanonicalName(name)
	if v, ok := t.exact[n]; ok {
		return v, true
	}
	if _, parent, ok := strings.Cut(n, "."); ok && parent != "" {
		if v, ok := t.wildcard[parent]; ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// Len returns the number of patterns in the table.
func (t *NameTable[V]) Len() int { return len(t.exact) + len(t.wildcard) }
