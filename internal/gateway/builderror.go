package gateway

import (
	"errors"
	"fmt"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
)

// fileKeys is the configuration key, under routes[i], of each certs role
// and field: where a file the builders refuse was named.
var fileKeys = map[[2]string]string{
	{certs.RoleServe, certs.FieldCert}:      "serve.cert",
	{certs.RoleServe, certs.FieldKey}:       "serve.key",
	{certs.RoleServeCA, certs.FieldCert}:    "serve.ca_cert",
	{certs.RoleServeCA, certs.FieldKey}:     "serve.ca_key",
	{certs.RoleClient, certs.FieldCert}:     "upstream_tls.cert",
	{certs.RoleClient, certs.FieldKey}:      "upstream_tls.key",
	{certs.RoleUpstreamCA, certs.FieldCert}: "upstream_tls.ca",
	{certs.RoleClientCA, certs.FieldCert}:   "serve.client_ca",
	{certs.RoleClientCRL, certs.FieldCert}:  "serve.client_crl",
}

// buildError turns what the builders of route i refused into a
// configuration error at the key it concerns (file:line: key: what to
// change), so that `run`, a reload and `check` report it alike: a
// certificate file at its key, a route name the CA may not mint for at
// its sni entry, anything else at the route.
func buildError(cfg *config.Config, i int, err error) *config.Error {
	route := fmt.Sprintf("routes[%d]", i)
	var ce *cacheDirError
	if errors.As(err, &ce) {
		return cfg.ErrorAt(route+".http.cache.dir", "%v", ce.err)
	}
	var se *sharedTierError
	if errors.As(err, &se) {
		return cfg.ErrorAt(route+".http.cache.shared", "%v", se.err)
	}
	var ae *auditLogError
	if errors.As(err, &ae) {
		return cfg.ErrorAt(route+".http.audit_log", "%v", ae.err)
	}
	var au *authError
	if errors.As(err, &au) {
		if au.key == "" {
			return cfg.ErrorAt(route+".http.auth", "%v", au.err)
		}
		return cfg.ErrorAt(route+".http.auth."+au.key, "%v", au.err)
	}
	var fe *certs.FileError
	if !errors.As(err, &fe) {
		return cfg.ErrorAt(route, "%v", err)
	}
	if fe.Field == certs.FieldNames {
		if keys := cfg.Routes[i].SNIKeys; fe.Index < len(keys) {
			return cfg.ErrorAt(keys[fe.Index], "%v", fe.Err)
		}
		return cfg.ErrorAt(route+".sni", "%v", fe.Err)
	}
	if key, ok := fileKeys[[2]string{fe.Role, fe.Field}]; ok {
		return cfg.ErrorAt(route+"."+key, "%v", fe.Err)
	}
	return cfg.ErrorAt(route, "%v", err)
}
