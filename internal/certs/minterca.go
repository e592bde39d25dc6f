package certs

import "crypto/x509"

// CA is the parsed CA certificate the Minter signs with now (the runtime
// API shows its subject and expiry for a route that mints its leaves).
func (m *Minter) CA() *x509.Certificate { return m.caPair.Leaf() }
