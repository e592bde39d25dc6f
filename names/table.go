package names

import (
	"errors"
	"fmt"
)

// ErrDuplicate is returned by Table.Add for a pattern already in the
// table (in any case, with or without a trailing dot).
var ErrDuplicate = errors.New("names: pattern already in the table")

// Table maps route patterns to values: exact names, and wildcards that
// match exactly one label below their base (Match). An exact name beats a
// wildcard. The zero value is an empty table. A Table is not safe for
// concurrent mutation; build it once, then share it read-only.
type Table[V any] struct {
	exact    map[string]V
	wildcard map[string]V // by base: "example.com" for "*.example.com"
}

// Add maps pattern to v. It fails, changing nothing, for an invalid
// pattern (the CheckPattern error, with the pattern quoted) and for one
// already in the table (ErrDuplicate).
func (t *Table[V]) Add(pattern string, v V) error {
	if err := CheckPattern(pattern); err != nil {
		return fmt.Errorf("%q: %w", pattern, err)
	}
	key, m := Canonical(pattern), &t.exact
	if base, wild := WildcardBase(key); wild {
		key, m = base, &t.wildcard
	}
	if *m == nil {
		*m = make(map[string]V)
	}
	if _, dup := (*m)[key]; dup {
		return fmt.Errorf("%q: %w", pattern, ErrDuplicate)
	}
	(*m)[key] = v
	return nil
}

// Lookup returns the value for name: the exact entry if there is one,
// else the wildcard one label above it. A name that is not a valid host
// name (IsHost) matches nothing. Lookup does not allocate for a name in
// lower case.
func (t *Table[V]) Lookup(name string) (V, bool) {
	var zero V
	if !IsHost(name) {
		return zero, false
	}
	n := Canonical(name)
	if v, ok := t.exact[n]; ok {
		return v, true
	}
	if p := parent(n); p != "" {
		if v, ok := t.wildcard[p]; ok {
			return v, true
		}
	}
	return zero, false
}

// Get returns the value Add stored for pattern itself (in any case, with
// or without a trailing dot), not what a name matching it would find:
// Get("*.example.com") is the wildcard's value.
func (t *Table[V]) Get(pattern string) (V, bool) {
	key, m := Canonical(pattern), t.exact
	if base, wild := WildcardBase(key); wild {
		key, m = base, t.wildcard
	}
	v, ok := m[key]
	return v, ok
}

// Len returns the number of patterns in the table.
func (t *Table[V]) Len() int { return len(t.exact) + len(t.wildcard) }
