package gateway

import (
	"crypto/tls"
	"log/slog"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
)

// clientTLS builds a bridge route's upstream client side from
// upstream_tls: the edge key pair and the CA bundle (each a worker that
// follows its files) behind one certs.ClientTLS. It is the one builder of
// that configuration: bridged traffic, health checks and `check --probe`
// all use what it returns, so they present the same identity, verify the
// same way and resume only sessions made under the certificate and trust
// in force.
func clientTLS(rc *config.Route, log *slog.Logger, m *certs.Metrics) (*certs.ClientTLS, []runner, error) {
	u := rc.UpstreamTLS
	cfg := certs.ClientTLSConfig{ServerName: u.ServerName, CurvePreferences: u.KeyExchanges}
	var err error
	var workers []runner
	if u.Cert != "" {
		if cfg.Cert, err = certs.NewKeyPair(certs.KeyPairConfig{
			CertFile: u.Cert, KeyFile: u.Key, Route: rc.Name, Role: certs.RoleClient,
			Logger: log, Metrics: m,
		}); err != nil {
			return nil, nil, err
		}
		workers = append(workers, cfg.Cert)
	}
	if u.CA != "" {
		if cfg.CA, err = certs.NewCABundle(certs.CABundleConfig{
			File: u.CA, Route: rc.Name, Role: certs.RoleUpstreamCA,
			Logger: log, Metrics: m,
		}); err != nil {
			return nil, nil, err
		}
		workers = append(workers, cfg.CA)
	}
	return certs.NewClientTLS(cfg), workers, nil
}

// checkClientTLS is the client configuration of a bridge route's health
// checks: the traffic's, with the SNI checks send.
func checkClientTLS(ct *certs.ClientTLS, rc *config.Route) func() *tls.Config {
	name := checkServerName(rc)
	return func() *tls.Config {
		c := ct.Config()
		if c.ServerName == "" {
			c.ServerName = name
		}
		return c
	}
}
