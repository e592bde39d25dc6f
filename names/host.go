package names

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Limits of a host name in presentation form (RFC 1035 section 2.3.4).
const (
	MaxLen      = 253 // bytes of a whole name, without the trailing dot
	MaxLabelLen = 63  // bytes of one label
)

// Canonical returns name with ASCII letters in lower case and one trailing
// dot removed. It does not check name. A name already canonical is
// returned as it is, without allocating.
func Canonical(name string) string {
	name = strings.TrimSuffix(name, ".")
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			return lowerASCII(name, i)
		}
	}
	return name
}

// lowerASCII lowers the ASCII letters of s from index i on.
func lowerASCII(s string, i int) string {
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// IsHost reports whether name, in any case and with or without one
// trailing dot, is a valid DNS host name. It does not allocate.
func IsHost(name string) bool { return hostFault(name).kind == faultNone }

// CheckHost returns what makes name not a valid DNS host name, nil if it
// is one (IsHost). The error says what to change; it does not repeat the
// name, which the caller quotes.
func CheckHost(name string) error {
	f := hostFault(name)
	if f.kind == faultNone {
		return nil
	}
	if _, err := netip.ParseAddr(strings.Trim(name, "[]")); err == nil {
		return errors.New("an IP address; want a DNS name (a TLS server name or certificate name is never an address)")
	}
	return f.err()
}

// faultKind is what is wrong with a name, found by hostFault.
type faultKind uint8

const (
	faultNone faultKind = iota
	faultEmpty
	faultTooLong
	faultEmptyLabel
	faultLabelTooLong
	faultHyphen
	faultChar
	faultNumeric
)

// fault is the first problem of a name: its kind, the label it is in and,
// for faultChar, the byte.
type fault struct {
	kind    faultKind
	label   string
	char    byte
	nameLen int
}

// hostFault checks name against the rules without allocating.
func hostFault(name string) fault {
	name = strings.TrimSuffix(name, ".")
	switch {
	case name == "":
		return fault{kind: faultEmpty}
	case len(name) > MaxLen:
		return fault{kind: faultTooLong, nameLen: len(name)}
	}
	var label string
	for rest := name; ; {
		var more bool
		label, rest, more = strings.Cut(rest, ".")
		if f := labelFault(label); f.kind != faultNone {
			return f
		}
		if !more {
			break
		}
	}
	if allDigits(label) {
		return fault{kind: faultNumeric, label: label}
	}
	return fault{}
}

// labelFault checks one label: 1..63 letters, digits and hyphens, no
// hyphen first or last.
func labelFault(label string) fault {
	switch {
	case label == "":
		return fault{kind: faultEmptyLabel}
	case len(label) > MaxLabelLen:
		return fault{kind: faultLabelTooLong, label: label}
	}
	for i := 0; i < len(label); i++ {
		if c := label[i]; !isLDH(c) {
			return fault{kind: faultChar, label: label, char: c}
		}
	}
	if label[0] == '-' || label[len(label)-1] == '-' {
		return fault{kind: faultHyphen, label: label}
	}
	return fault{}
}

func isLDH(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// err describes the fault and what to change.
func (f fault) err() error {
	switch f.kind {
	case faultEmpty:
		return errors.New("empty name")
	case faultTooLong:
		return fmt.Errorf("name of %d bytes; want at most %d", f.nameLen, MaxLen)
	case faultEmptyLabel:
		return errors.New("empty label (a leading dot, or two dots in a row)")
	case faultLabelTooLong:
		return fmt.Errorf("label %s of %d bytes; want at most %d", shorten(f.label), len(f.label), MaxLabelLen)
	case faultHyphen:
		return fmt.Errorf("label %q starts or ends with a hyphen", f.label)
	case faultChar:
		return charError(f.label, f.char)
	case faultNumeric:
		return fmt.Errorf("last label %q is all digits, which reads as an IP address; want a DNS name", f.label)
	}
	return nil
}

func charError(label string, c byte) error {
	const want = "want letters, digits and '-'"
	switch {
	case c == '*':
		return fmt.Errorf("label %s has '*'; a wildcard is allowed only as the whole first label of a route name, as in \"*.example.com\"", shorten(label))
	case c >= 0x80:
		return fmt.Errorf("label %s is not ASCII; write an international name in its xn-- (punycode) form", shorten(label))
	case c == '_':
		return fmt.Errorf("label %s has '_'; %s (host names and certificate names have no underscore)", shorten(label), want)
	}
	return fmt.Errorf("label %s has %q; %s", shorten(label), c, want)
}

// shorten quotes s, cut to 40 bytes so that a 300-byte label does not
// fill the message.
func shorten(s string) string {
	const n = 40
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", s[:n])
}
