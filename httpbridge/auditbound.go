package httpbridge

import (
	"strconv"
	"unicode/utf8"

	"github.com/snigate/snigate/oci"
)

// Bounds of the audit record's strings, in bytes of their JSON form.
// Most of a record's strings come from the node (its certificate's name,
// the method, the path's repository and reference) or are built from
// what it sent (a refusal's error quotes its Host); without a bound, a
// node that repeats a long value cheaply (HTTP/2 header compression
// sends a 4,000-byte :authority once and then one byte per request)
// writes far more audit log than it sends.
const (
	// MaxAuditField bounds each string field of an audit record but
	// the error.
	MaxAuditField = 256
	// MaxAuditError bounds the record's error text.
	MaxAuditError = 1024
	// MaxAuditRecord bounds a whole audit record line, newline included:
	// the fixed keys and numbers, 10 fields of MaxAuditField and an error
	// of MaxAuditError, each with its truncation marker.
	MaxAuditRecord = 512 + 10*(MaxAuditField+truncMarkerMax) + MaxAuditError + truncMarkerMax
)

// truncMarkerMax is the longest marker bound appends: "…(truncated N
// bytes)" with N up to 20 digits.
const truncMarkerMax = len("…(truncated  bytes)") + 20

// bound returns s whole when its JSON form (as the audit writer encodes
// it: no HTML escaping) takes at most max bytes; else the longest prefix
// of whole characters that does, followed by "…(truncated N bytes)", N
// being how many bytes of s were left out.
func bound(s string, max int) string {
	if len(s) <= max/6 { // every byte costs at most 6 (\u00XX)
		return s
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += jsonCost(r, size)
		if n > max {
			return s[:i] + "…(truncated " + strconv.Itoa(len(s)-i) + " bytes)"
		}
		i += size
	}
	return s
}

// jsonCost is how many bytes encoding/json writes for r, read as size
// bytes of a string (utf8.RuneError of size 1: an invalid byte, written
// as \ufffd).
func jsonCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029':
		return 6
	}
	return size
}

// bounded is l with every string within its bound.
func (l auditLine) bounded() auditLine {
	for _, f := range []*string{&l.Route, &l.Client, &l.Node, &l.Method, &l.Repository, &l.Reference,
		&l.Digest, &l.Cache, &l.Upstream} {
		*f = bound(*f, MaxAuditField)
	}
	l.Kind = oci.Kind(bound(string(l.Kind), MaxAuditField))
	l.Error = bound(l.Error, MaxAuditError)
	return l
}
