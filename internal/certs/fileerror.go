package certs

import "fmt"

// Fields of FileError: which setting of the constructor's config a
// refusal concerns.
const (
	FieldCert  = "cert"  // CertFile (KeyPairConfig, MinterConfig.CACertFile) or CABundleConfig.File
	FieldKey   = "key"   // KeyFile, MinterConfig.CAKeyFile
	FieldNames = "names" // one entry of MinterConfig.Names, at Index
)

// FileError is how NewKeyPair, NewMinter and NewCABundle refuse what their
// files hold (unreadable, mismatched, not a CA, names it cannot serve, a
// usage it lacks). Role and Field name the setting, so that the caller can
// point at its own configuration key (the gateway maps role "serve" and
// field "cert" to routes[i].serve.cert); Err says what is wrong and what
// to change, without the route and role.
type FileError struct {
	Route string // MinterConfig.Route, KeyPairConfig.Route, CABundleConfig.Route
	Role  string // RoleServe, RoleClient, RoleServeCA, RoleUpstreamCA, RoleClientCA or RoleClientCRL
	Field string // FieldCert, FieldKey or FieldNames
	Index int    // FieldNames: the index in MinterConfig.Names; otherwise 0
	Err   error
}

// Error prints "certs: route R ROLE: " and Err.
func (e *FileError) Error() string {
	return fmt.Sprintf("certs: route %q %s: %v", e.Route, e.Role, e.Err)
}

// Unwrap returns Err.
func (e *FileError) Unwrap() error { return e.Err }
