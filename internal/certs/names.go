package certs

import (
	"errors"
	"strings"
)

// ErrNoServerName is returned by Minter.GetCertificate for a ClientHello
// without SNI: a certificate is minted for a name, so the client must send
// one.
var ErrNoServerName = errors.New("certs: the client sent no server name (SNI); connect by name, not by address, to get a minted certificate")

// ErrNameNotPermitted is matched (errors.Is) by the error Minter returns
// for a name outside the CA's name constraints.
var ErrNameNotPermitted = errors.New("certs: name outside the CA's name constraints")

// What a host name is, and how a one-label wildcard matches, are the rules
// of package names. This file keeps only the X.509 reading of a name
// constraint, which is not a rule of names.

// withinSuffix reports whether name is base or any name below it, the X.509
// reading of a DNS name constraint ("example.com" covers "a.b.example.com";
// ".example.com" covers only names below it).
func withinSuffix(name, base string) bool {
	if strings.HasPrefix(base, ".") {
		return strings.HasSuffix(name, base)
	}
	return name == base || strings.HasSuffix(name, "."+base)
}
