package gateway

import (
	"crypto/x509"
	"log/slog"

	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/sni"
)

// clientAuth builds a bridge route's node identity from serve.client_ca,
// client_names and client_crl: the bundle and the CRL each a worker that
// follows its file, the CRL re-checked whenever the bundle changes (a CRL
// refused for want of its signer is taken once the signer arrives). nil
// when client_ca is not set.
func clientAuth(rc *config.Route, log *slog.Logger, m *certs.Metrics) (*sni.ClientAuth, []runner, error) {
	s := rc.Serve
	if s.ClientCA == "" {
		return nil, nil, nil
	}
	var crl *certs.CRL
	bundle, err := certs.NewCABundle(certs.CABundleConfig{
		File: s.ClientCA, Route: rc.Name, Role: certs.RoleClientCA, Logger: log, Metrics: m,
		OnReloadFunc: func(cas []*x509.Certificate, err error) {
			if err == nil {
				warnClientIssuers(log, rc, cas)
			}
			if err == nil && crl != nil {
				crl.Recheck()
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	a := &sni.ClientAuth{CAs: bundle, Names: s.ClientNames}
	workers := []runner{bundle}
	if s.ClientCRL != "" {
		if crl, err = certs.NewCRL(certs.CRLConfig{File: s.ClientCRL, CA: bundle, Route: rc.Name, Logger: log, Metrics: m}); err != nil {
			return nil, nil, err
		}
		a.CRL = crl
		workers = append(workers, crl)
	}
	return a, workers, nil
}

// warnClientIssuers says, when the serve.client_ca file changed to a
// bundle that can issue no client certificate, that every node will now
// be refused and why: the refusals themselves (reason wrong_usage) name
// the node's certificate, which is not at fault.
func warnClientIssuers(log *slog.Logger, rc *config.Route, cas []*x509.Certificate) {
	if why := config.ClientIssuersFault(cas); why != "" {
		log.Warn("serve.client_ca can issue no client certificate: every node is refused until the bundle is fixed",
			"route", rc.Name, "file", rc.Serve.ClientCA, "why", why)
	}
}
