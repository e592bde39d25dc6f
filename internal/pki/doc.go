// Package pki makes throwaway certificate authorities and certificates, in
// memory and on disk: for snigate demo and for every test that needs a
// certificate. Nothing here is meant for a production CA (see
// internal/certs.InitCA for that). Keys are ECDSA P-256.
//
// An Authority issues certificates described by options; the defaults make
// a day-long certificate with a random serial:
//
//	ca, err := pki.NewAuthority("test CA")
//	srv, err := ca.Issue(pki.CommonName("registry"), pki.SANs("registry.test", "127.0.0.1"))
//	cli, err := ca.Issue(pki.CommonName("edge")) // no SANs: a client certificate
//	certFile, keyFile, err := cli.Write(dir, "edge") // edge.crt, edge.key (0600)
//
// SelfSigned makes a certificate signed by its own key, and
// Authority.Intermediate a CA signed by another whose leaves carry the
// chain.
package pki
