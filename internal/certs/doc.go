// Package certs provides the certificates snigate serves and presents, each
// re-read when its files change on disk (in-place write, rename-over, the
// Kubernetes Secret ..data symlink swap), with the last good one kept in use
// when a change cannot be loaded:
//
//   - KeyPair: serve.cert/key or upstream_tls.cert/key, loaded and watched
//     by certinel's fswatcher, supervised (restarted with backoff after a
//     failed load, plus a stat poll for what certinel does not watch).
//   - CABundle: upstream_tls.ca, a PEM bundle as an *x509.CertPool snapshot.
//   - Minter: serve.ca_cert/ca_key, a leaf per SNI name minted on first use,
//     cached, renewed in the background, within the CA's name constraints.
//   - InitCA: `snigate ca init`, a CA for the Minter, optionally
//     name-constrained; InitCASummary says what was made and how nodes
//     trust it (with the recipe internal/nodeconfig gives).
//
// Usage:
//
//	m := certs.NewMetrics(prometheus.DefaultRegisterer) // once per process
//	kp, err := certs.NewKeyPair(certs.KeyPairConfig{
//		CertFile: "/etc/snigate/tls/registry.crt", KeyFile: "/etc/snigate/tls/registry.key",
//		Route: "registry", Role: certs.RoleServe, Logger: log, Metrics: m,
//	})
//	if err != nil { ... }                         // names the files and what is wrong
//	go kp.Run(ctx)                               // follows changes until ctx is done
//	srv := &tls.Config{GetCertificate: kp.GetCertificate}
//
//	minter, err := certs.NewMinter(certs.MinterConfig{
//		CACertFile: "/etc/snigate/ca/ca.crt", CAKeyFile: "/etc/snigate/ca/ca.key",
//		Route: "registry", Logger: log, Metrics: m,
//	})
//	go minter.Run(ctx)
//	srv = &tls.Config{GetCertificate: minter.GetCertificate}
//
// Every Run returns nil once ctx is done and the goroutines it started have
// ended. Nothing in this package logs key material.
package certs
