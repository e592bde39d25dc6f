package sni

import (
	"crypto/x509"
	"errors"
	"strings"

	"github.com/snigate/snigate/upstream"
)

// dialReporter is the optional capability of a route's Upstreams to learn
// how each connection attempt went (passive health: consecutive failures
// take the host down before the next active check). *upstream.Pool has it.
type dialReporter interface {
	ReportDial(h *upstream.Host, err error)
}

// clientCaused reports whether a failed upstream handshake may be the
// client's doing rather than the upstream's: the server name the
// upstream's certificate is checked against comes from the client's SNI
// (unless upstream_tls.server_name is set), and the ALPN list the
// upstream may refuse is the client's. Counting those would let any
// client take a healthy upstream down with three odd ClientHellos.
func clientCaused(err error) bool {
	var badHost x509.HostnameError
	if errors.As(err, &badHost) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "remote error: tls: no application protocol") ||
		strings.Contains(msg, "remote error: tls: unrecognized name")
}
