package names

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IdentityKind is the kind of certificate name an identity pattern is
// matched against (routes[].serve.client_names): it decides what "*" may
// not cross and whether case matters.
type IdentityKind uint8

// Kinds of certificate identity.
const (
	// IdentityCN is the subject common name. "*" stops at ":", the
	// separator of Kubernetes identities (system:node:NAME), so
	// "system:node:*" matches every node name, dotted ones included.
	// Case matters.
	IdentityCN IdentityKind = iota
	// IdentityDNS is a DNS subject alternative name: "*" stays within one
	// label (it stops at "."). Case does not matter.
	IdentityDNS
	// IdentityURI is a URI subject alternative name: "*" stays within one
	// path segment (it stops at "/"). Case matters.
	IdentityURI
)

// MaxIdentityPatternLen bounds an identity pattern, in bytes.
const MaxIdentityPatternLen = 1024

// separator is what "*" does not match in a name of kind k.
func (k IdentityKind) separator() byte {
	switch k {
	case IdentityDNS:
		return '.'
	case IdentityURI:
		return '/'
	}
	return ':'
}

// CheckIdentityPattern returns what makes p not an identity pattern, nil
// if it is one: 1..MaxIdentityPatternLen bytes of UTF-8 without control
// characters, with at most one "*", and not "*" alone. The error says
// what to change.
func CheckIdentityPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty pattern: want an identity such as \"system:node:*\"")
	case len(p) > MaxIdentityPatternLen:
		return fmt.Errorf("%d bytes: an identity pattern is at most %d", len(p), MaxIdentityPatternLen)
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return errors.New("holds a control character")
	case strings.Count(p, "*") > 1:
		return errors.New("more than one \"*\": a pattern holds at most one, matching within one label or segment")
	case p == "*":
		return errors.New("\"*\" alone: leave client_names empty to accept any certificate that chains to client_ca")
	}
	return nil
}

// MatchIdentity reports whether value, a certificate name of kind k,
// matches pattern (which CheckIdentityPattern accepts): equal, or, for a
// pattern with a "*", the text before and after it around one or more
// characters that hold no separator of k. A DNS name is compared without
// regard to case and one trailing dot.
func MatchIdentity(pattern string, k IdentityKind, value string) bool {
	if k == IdentityDNS {
		pattern, value = Canonical(pattern), Canonical(value)
	}
	pre, suf, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == value
	}
	if len(value) <= len(pre)+len(suf) || !strings.HasPrefix(value, pre) || !strings.HasSuffix(value, suf) {
		return false
	}
	return strings.IndexByte(value[len(pre):len(value)-len(suf)], k.separator()) < 0
}
