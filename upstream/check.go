package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
)

// checker runs the configured check against one address.
type checker struct {
	check     Check
	dial      dialFunc
	tlsConfig func() *tls.Config
}

// run performs one check of kind (Check.Kind, or tls where Pool.checkKind
// says) of addr under ctx. sessions is the check-only session cache of
// that host.
func (c *checker) run(ctx context.Context, kind CheckKind, addr string, sessions tls.ClientSessionCache) error {
	if kind == CheckTCP {
		return c.tcp(ctx, addr)
	}
	opt := sessionOptions{sessions: sessions}
	if kind == CheckHTTP {
		opt.nextProtos = []string{"http/1.1"}
	}
	var s session
	defer s.close()
	if err := s.open(ctx, c.dial, addr, c.base(), opt); err != nil {
		return err
	}
	if kind == CheckTLS {
		return s.confirm(ctx)
	}
	return c.http(ctx, &s)
}

// tcp passes when a TCP connection to addr is established.
func (c *checker) tcp(ctx context.Context, addr string) error {
	conn, err := c.dial(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	return conn.Close()
}

// http sends GET Path over the session (the server's verdict on our client
// certificate comes with the answer) and checks the status.
func (c *checker) http(ctx context.Context, s *session) error {
	resp, err := s.get(ctx, s.serverName, c.check.Path)
	if err != nil {
		return err
	}
	return c.statusErr(resp.StatusCode)
}

// statusErr reports a status outside ExpectStatus.
func (c *checker) statusErr(status int) error {
	if slices.Contains(c.check.ExpectStatus, status) {
		return nil
	}
	return fmt.Errorf("GET %s: status %d, want one of %v", c.check.Path, status, c.check.ExpectStatus)
}

// base returns the client configuration to clone: the one real connections
// use, or, without one, a configuration that only shows that the upstream
// speaks TLS.
func (c *checker) base() *tls.Config {
	if c.tlsConfig != nil {
		if cfg := c.tlsConfig(); cfg != nil {
			return cfg
		}
	}
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // splice routes: no trust anchor is known, and no data is sent
}

// hint returns, for the TLS failures operators meet most, what to change
// in the configuration, formatted to follow the error: " (hint)".
func hint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	msg := err.Error()
	switch {
	case errors.As(err, &unknownCA):
		return " (the upstream's certificate is not signed by a CA we trust: set upstream_tls.ca to its CA bundle)"
	case errors.As(err, &badHost):
		return " (the upstream's certificate does not cover the server name: set upstream_tls.server_name to a name it does)"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return " (the upstream's certificate has expired or is not valid yet)"
	case strings.Contains(msg, "remote error: tls: certificate required"),
		strings.Contains(msg, "remote error: tls: bad certificate"),
		strings.Contains(msg, "remote error: tls: unknown certificate authority"),
		strings.Contains(msg, "remote error: tls: certificate expired"):
		return refusedCertHint
	}
	return ""
}

const refusedCertHint = " (the upstream refused our client certificate: check upstream_tls.cert and upstream_tls.key)"

// isRemoteAlert reports whether err is a TLS alert sent by the peer.
func isRemoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}
