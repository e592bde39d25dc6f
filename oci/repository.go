package oci

import (
	"errors"
	"fmt"
	"strings"
)

// Why a repository pattern is refused (ParseRepoPattern wraps one of
// them), so that a caller can word its own message.
var (
	ErrPatternEmpty      = errors.New("empty pattern")
	ErrPatternDoubleStar = errors.New(`"**" may only be the last component`)
	ErrPatternPartial    = errors.New("partial wildcards are not supported")
	ErrPatternComponent  = errors.New("not a component of the OCI distribution name grammar")
)

// RepoPattern is one entry of a repository allow-list
// (routes[].http.repositories): path components of a repository name,
// where "*" matches exactly one component and a final "**" one or more.
// The zero RepoPattern matches nothing.
type RepoPattern struct {
	text  string
	comps []string
}

// ParseRepoPattern validates p: "team/app", "team/*", "team/**", "*",
// "**". Literal components follow the distribution name grammar
// (ValidComponent). The error wraps one of the ErrPattern values.
func ParseRepoPattern(p string) (RepoPattern, error) {
	if p == "" {
		return RepoPattern{}, &patternError{ErrPatternEmpty, `empty pattern: want a repository name such as "team/app", "team/*" or "team/**"`}
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		switch {
		case c == "**" && i != len(comps)-1:
			return RepoPattern{}, &patternError{ErrPatternDoubleStar, fmt.Sprintf(`%q: "**" may only be the last component (as in "team/**")`, p)}
		case c == "*" || c == "**":
		case strings.Contains(c, "*"):
			return RepoPattern{}, &patternError{ErrPatternPartial, fmt.Sprintf(`%q: component %q: "*" stands alone for one component and "**" for any depth; partial wildcards are not supported`, p, c)}
		case !ValidComponent(c):
			return RepoPattern{}, &patternError{ErrPatternComponent, fmt.Sprintf("%q: component %q: want lower-case letters and digits, separated by '.', '_', '__' or '-' (the OCI distribution name grammar)", p, c)}
		}
	}
	return RepoPattern{text: p, comps: comps}, nil
}

// patternError is a refused pattern: its message, and the reason it
// unwraps to.
type patternError struct {
	reason error
	msg    string
}

func (e *patternError) Error() string { return e.msg }
func (e *patternError) Unwrap() error { return e.reason }

// String is the pattern as written.
func (p RepoPattern) String() string { return p.text }

// Match reports whether the repository name matches the pattern.
func (p RepoPattern) Match(name string) bool {
	rest := name
	for i, c := range p.comps {
		if c == "**" {
			return rest != ""
		}
		if rest == "" {
			return false
		}
		comp, tail, more := strings.Cut(rest, "/")
		if c != "*" && c != comp {
			return false
		}
		if !more && i < len(p.comps)-1 {
			return false
		}
		rest = tail
		if !more {
			return i == len(p.comps)-1
		}
	}
	return false
}

// RepoAllowList is a parsed repository allow-list; empty (or nil) allows
// every repository.
type RepoAllowList []RepoPattern

// NewRepoAllowList parses every pattern, reporting all problems together
// with their index ("repositories[i]: ...").
func NewRepoAllowList(patterns []string) (RepoAllowList, error) {
	var errs []error
	list := make(RepoAllowList, 0, len(patterns))
	for i, s := range patterns {
		p, err := ParseRepoPattern(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("repositories[%d]: %w", i, err))
			continue
		}
		list = append(list, p)
	}
	return list, errors.Join(errs...)
}

// Allows reports whether name matches one of the patterns; an empty list
// allows every name.
func (l RepoAllowList) Allows(name string) bool {
	if len(l) == 0 {
		return true
	}
	for _, p := range l {
		if p.Match(name) {
			return true
		}
	}
	return false
}

// ValidName reports whether name matches the distribution specification:
// components [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* separated by "/", at most
// MaxNameLen bytes.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen {
		return false
	}
	for comp := range strings.SplitSeq(name, "/") {
		if !ValidComponent(comp) {
			return false
		}
	}
	return true
}

// ValidComponent checks one path component of a name.
func ValidComponent(c string) bool {
	if c == "" || !isLowerAlnum(c[0]) || !isLowerAlnum(c[len(c)-1]) {
		return false
	}
	for i := 1; i < len(c); i++ {
		if isLowerAlnum(c[i]) {
			continue
		}
		j := i
		for j < len(c) && !isLowerAlnum(c[j]) {
			j++
		}
		if !validSeparator(c[i:j]) {
			return false
		}
		i = j - 1
	}
	return true
}

// validSeparator: ".", "_", "__" or one or more "-".
func validSeparator(s string) bool {
	switch s {
	case ".", "_", "__":
		return true
	}
	return strings.Trim(s, "-") == ""
}

// ValidTag: [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}.
func ValidTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isAlnum(t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-' {
			return false
		}
	}
	return true
}

// ValidDigest: algorithm ":" encoded, algorithm
// [a-z0-9]+([+._-][a-z0-9]+)*, encoded [a-zA-Z0-9=_-]+; sha256 and
// sha512 must be lower-case hex of their length.
func ValidDigest(d string) bool {
	alg, enc, ok := strings.Cut(d, ":")
	if !ok || !validAlgorithm(alg) || enc == "" {
		return false
	}
	switch alg {
	case "sha256":
		return len(enc) == 64 && isLowerHex(enc)
	case "sha512":
		return len(enc) == 128 && isLowerHex(enc)
	}
	for i := 0; i < len(enc); i++ {
		if c := enc[i]; !isAlnum(c) && c != '=' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// validAlgorithm checks a digest algorithm name.
func validAlgorithm(a string) bool {
	if a == "" || !isLowerAlnum(a[0]) || !isLowerAlnum(a[len(a)-1]) {
		return false
	}
	for i := 1; i < len(a); i++ {
		if sep := strings.IndexByte("+._-", a[i]) >= 0; sep && !isLowerAlnum(a[i-1]) {
			return false
		} else if !sep && !isLowerAlnum(a[i]) {
			return false
		}
	}
	return true
}

// validSession checks an upload session id (opaque to clients; registries
// use UUIDs or base64): [a-zA-Z0-9._=-]+, at most 512 bytes.
func validSession(s string) bool {
	if s == "" || len(s) > 512 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && strings.IndexByte("._=-", c) < 0 {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isAlnum(c byte) bool { return isLowerAlnum(c) || 'A' <= c && c <= 'Z' }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
