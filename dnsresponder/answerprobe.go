package dnsresponder

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
)

// CheckLabel stands for the "*" of a wildcard routed name in the answer
// check's ClientHello: "*.registry.example.com" is checked as
// "snigate-answer-check.registry.example.com", a name the wildcard routes.
const CheckLabel = "snigate-answer-check"

// CheckServerName is the SNI the answer check sends for a routed name
// pattern: the name itself, or a wildcard with its "*" replaced by
// CheckLabel.
func CheckServerName(pattern string) string {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return CheckLabel + "." + rest
	}
	return pattern
}

// CheckALPN is the protocol name the check offers after h2 and http/1.1,
// by which the gateways it reaches tell its connections from the nodes'
// and log them apart (result answer_check, at Debug) rather than as
// clients that failed their handshake. (sni.AnswerCheckALPN is the same
// name; this package does not import sni, which the CoreDNS plugin does
// not build.) The ALPN offer has h2 and http/1.1 first so that a server
// that requires a protocol it knows still answers with a ServerHello.
const CheckALPN = "snigate-answer-check"

// checkProtos is the check's ALPN offer.
var checkProtos = []string{"h2", "http/1.1", CheckALPN}

// TLS record and handshake message types the check reads.
const (
	recordHandshake      = 22
	handshakeServerHello = 2
	helloPrefixLen       = 6 // record header (5 bytes) and the handshake message type
)

// errServerHello stops the handshake once the ServerHello has arrived:
// the check has its answer.
var errServerHello = errors.New("server hello received")

// handshake is the check of one address: a TCP connection, then a
// ClientHello for the server name, which must be answered with a
// ServerHello. The certificate is not verified and none is sent, so a
// route that requires node identity passes; an alert (unrecognized_name
// for a gateway that does not route the name), a close or anything that
// is not TLS fails it.
func (c *AnswerCheck) handshake(ctx context.Context, addr netip.AddrPort) error {
	dial := c.cfg.DialContextFunc
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", addr.String())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d) //nolint:errcheck // a failed deadline fails the read
	}
	hc := &helloConn{Conn: conn}
	err = tls.Client(hc, &tls.Config{
		ServerName:         c.cfg.ServerName,
		NextProtos:         checkProtos,
		InsecureSkipVerify: true, //nolint:gosec // the check asks for a ServerHello, not for trust
		MinVersion:         tls.VersionTLS12,
	}).HandshakeContext(ctx)
	if hc.serverHello {
		closeGently(conn)
		return nil
	}
	if err == nil { // cannot happen: the handshake stops at the ServerHello
		return nil
	}
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("tls handshake for %s: no ServerHello within the timeout (%v)", c.cfg.ServerName, c.cfg.Timeout)
	}
	return fmt.Errorf("tls handshake for %s: %w", c.cfg.ServerName, err)
}

// helloConn watches the first bytes the server sends and stops the
// handshake with errServerHello once they are a ServerHello.
type helloConn struct {
	net.Conn
	prefix      []byte
	serverHello bool
}

func (h *helloConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if len(h.prefix) < helloPrefixLen {
		h.prefix = append(h.prefix, p[:min(n, helloPrefixLen-len(h.prefix))]...)
		if len(h.prefix) == helloPrefixLen && h.prefix[0] == recordHandshake && h.prefix[5] == handshakeServerHello {
			h.serverHello = true
			return 0, errServerHello
		}
	}
	return n, err
}

// closeGently ends a check that has its ServerHello without a reset: it
// sends FIN, then reads what the server still sends until it closes too
// (or the check's deadline), so that the gateway checked logs a client
// that left rather than a connection reset.
func closeGently(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		io.Copy(io.Discard, conn) //nolint:errcheck // the check has passed; this only tidies up
	}
}
