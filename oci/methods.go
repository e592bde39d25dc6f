package oci

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// DefaultMethods are the methods of a route that lists none: a read-only
// bridge. A new slice each call.
func DefaultMethods() []string { return []string{http.MethodGet, http.MethodHead} }

// KnownMethods are the methods a configuration may list
// (routes[].http.methods): those the OCI distribution API uses, plus
// OPTIONS. A new slice each call.
func KnownMethods() []string {
	return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
}

// IsKnownMethod reports whether m is one of KnownMethods.
func IsKnownMethod(m string) bool { return slices.Contains(KnownMethods(), m) }

// ValidMethod reports whether m is an HTTP method token (RFC 9110) in
// upper case: what a bridge built without a configuration file accepts.
// Every KnownMethods entry is one.
func ValidMethod(m string) bool {
	return m != "" && strings.ToUpper(m) == m && !strings.ContainsFunc(m, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r)
	})
}

// CheckMethods validates methods with ValidMethod, naming the first one
// refused by its index.
func CheckMethods(methods []string) error {
	for i, m := range methods {
		if !ValidMethod(m) {
			return fmt.Errorf("methods[%d] %q: want an HTTP method in upper case, such as GET, HEAD, POST, PUT, PATCH or DELETE", i, m)
		}
	}
	return nil
}
