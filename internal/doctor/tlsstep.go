package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// tlsStep is step "tls": a handshake with SNI NAME, then the chain and
// name verified against the node's trust (loadTrust) and the ALPN
// protocol agreed.
func (r *run) tlsStep(ctx context.Context) bool {
	tr, err := r.loadTrust()
	if err != nil {
		r.report(Result{Status: Fail, Step: "tls", Found: err.Error(), Advice: "fix the file, or pass --ca FILE / --client-cert FILE"})
		return false
	}
	var asked atomic.Bool
	cfg := &tls.Config{ServerName: r.t.host, NextProtos: []string{"h2", "http/1.1"}, RootCAs: tr.roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			if len(tr.client) > 0 {
				return &tr.client[0], nil
			}
			return &tls.Certificate{}, nil // none: send an empty Certificate message
		}}
	state, err := handshake(ctx, r.addr, cfg, r.cfg.Timeout)
	r.noCert = asked.Load() && len(tr.client) == 0
	if err != nil {
		r.report(Result{Status: Fail, Step: "tls", Found: fmt.Sprintf("handshake with %s as %s: %v", r.addr, r.t.host, err), Advice: handshakeAdvice(err, r.t.host)})
		return false
	}
	leaf := state.PeerCertificates[0]
	if err := verify(state, tr.roots, r.t.host); err != nil {
		r.report(Result{Status: Fail, Step: "tls", Found: verifyText(err, leaf, tr.source), Advice: verifyAdvice(err, r.t)})
		return false
	}
	r.tls = cfg
	found := fmt.Sprintf("%s, ALPN %s, certificate for %s issued by %q until %s, trusted by %s",
		tls.VersionName(state.Version), alpnName(state.NegotiatedProtocol), r.t.host, leaf.Issuer.CommonName,
		leaf.NotAfter.UTC().Format(time.DateOnly), tr.source)
	if tr.clientSource != "" {
		found += "; client certificate " + tr.clientSource
	}
	r.report(Result{Status: OK, Step: "tls", Found: found})
	return true
}

func alpnName(p string) string {
	if p == "" {
		return "none (http/1.1)"
	}
	return p
}

// handshake connects to addr and completes a TLS handshake without
// verifying (verify does, to say precisely what is wrong).
func handshake(ctx context.Context, addr string, cfg *tls.Config, timeout time.Duration) (tls.ConnectionState, error) {
	c := cfg.Clone()
	c.InsecureSkipVerify = true
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := tls.Dialer{Config: c}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.(*tls.Conn).ConnectionState(), nil
}

// verify checks the peer's chain and name as a client would.
func verify(state tls.ConnectionState, roots *x509.CertPool, name string) error {
	inter := x509.NewCertPool()
	for _, c := range state.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := state.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: name})
	return err
}

func verifyText(err error, leaf *x509.Certificate, source string) string {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	switch {
	case errors.As(err, &ua):
		return fmt.Sprintf("certificate issued by %q is not trusted by %s", leaf.Issuer.CommonName, source)
	case errors.As(err, &he):
		return fmt.Sprintf("certificate is for %s, not %s", strings.Join(leaf.DNSNames, ", "), he.Host)
	}
	return "certificate: " + err.Error()
}

func verifyAdvice(err error, t target) string {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return fmt.Sprintf("trust the gateway's CA: install certs.d/%s/ from snigate node-config in /etc/containerd/certs.d (or pass --ca FILE to check with it)", t.registry())
	case errors.As(err, &he):
		return "the gateway must serve a certificate for " + t.host + ": mint per name with serve.ca_cert, or add the name to serve.cert"
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return "renew the gateway's serving certificate (or fix this node's clock)"
	}
	return "check the gateway's serve: certificate"
}

// useAdvice says what to change for a request through the gateway that
// failed: when the gateway asked for a client certificate the node does
// not have, any failure of the connection is that (TLS 1.3 refuses it
// after the handshake: an alert, a reset or a broken pipe, whichever the
// client meets first).
func (r *run) useAdvice(err error, name string) string {
	if r.noCert {
		return nodeIdentityAdvice
	}
	return handshakeAdvice(err, name)
}

const nodeIdentityAdvice = "the route requires node identity (serve.client_ca): give the node a client certificate from that CA (hosts.toml client = ..., see snigate node-config) or pass --client-cert FILE"

// handshakeAdvice says what to change for a failed handshake; it also
// reads errors that TLS 1.3 reports on the first read (a client
// certificate the gateway rejects).
func handshakeAdvice(err error, name string) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "unrecognized name"):
		return "the gateway has no route for " + name + ": add it to a route's sni"
	case strings.Contains(s, "certificate required"), strings.Contains(s, "bad certificate"), strings.Contains(s, "unknown certificate authority"):
		return nodeIdentityAdvice
	case errors.Is(err, io.EOF), strings.Contains(s, "connection reset"):
		return "the connection was closed during the handshake: is this port snigate's TLS listener (listen.tls), and is the node in listen.allow?"
	case strings.Contains(s, "first record does not look like a TLS handshake"):
		return "this port speaks plain text, not TLS: point " + name + " at the gateway's listen.tls port"
	}
	return "see the gateway's log for this connection"
}
