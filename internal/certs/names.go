package certs

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrNoServerName is returned by Minter.GetCertificate for a ClientHello
// without SNI: a certificate is minted for a name, so the client must send
// one.
var ErrNoServerName = errors.New("certs: the client sent no server name (SNI); connect by name, not by address, to get a minted certificate")

// ErrNameNotPermitted is matched (errors.Is) by the error Minter returns
// for a name outside the CA's name constraints.
var ErrNameNotPermitted = errors.New("certs: name outside the CA's name constraints")

// maxNameLen is the longest DNS name in presentation form, without the
// trailing dot.
const maxNameLen = 253

// canonicalName lowercases name and drops one trailing dot.
func canonicalName(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// checkName accepts a canonical host name: 1..253 bytes of labels of 1..63
// letters, digits, hyphens (not leading or trailing) or underscores. It
// rejects wildcards and IP addresses, which are never minted.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > maxNameLen {
		return fmt.Errorf("name of %d bytes; want at most %d", len(name), maxNameLen)
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return fmt.Errorf("%q is an IP address; want a DNS name", name)
	}
	for label := range strings.SplitSeq(name, ".") {
		if err := checkLabel(label); err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
	}
	return nil
}

func checkLabel(label string) error {
	switch {
	case label == "":
		return errors.New("empty label")
	case len(label) > 63:
		return errors.New("label longer than 63 bytes")
	case label[0] == '-' || label[len(label)-1] == '-':
		return fmt.Errorf("label %q starts or ends with a hyphen", label)
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("label %q has %q; want letters, digits, '-' or '_'", label, c)
		}
	}
	return nil
}

// oneLabelBelow reports whether name is base with exactly one more label in
// front ("a.example.com" for "example.com", not "a.b.example.com").
func oneLabelBelow(name, base string) bool {
	head, ok := strings.CutSuffix(name, "."+base)
	return ok && head != "" && !strings.Contains(head, ".")
}

// withinSuffix reports whether name is base or any name below it, the X.509
// reading of a DNS name constraint ("example.com" covers "a.b.example.com";
// ".example.com" covers only names below it).
func withinSuffix(name, base string) bool {
	if strings.HasPrefix(base, ".") {
		return strings.HasSuffix(name, base)
	}
	return name == base || strings.HasSuffix(name, "."+base)
}
