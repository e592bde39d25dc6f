package sni

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
	"time"

	"github.com/snigate/snigate/upstream"
)

// dialReporter is the optional capability of a route's Upstreams to learn
// how each connection attempt went (passive health: consecutive failures
// take the host down before the next active check). *upstream.Pool has it.
type dialReporter interface {
	ReportDial(h *upstream.Host, err error)
}

// minAttemptTimeout is the least time an attempt on one candidate gets
// when several remain (see attemptDeadline).
const minAttemptTimeout = 500 * time.Millisecond

// attemptDeadline is the deadline of an attempt started at now on the
// first of left candidates, all of which must fit before deadline: an even
// share of the time left, at least minAttemptTimeout, never past deadline.
// So an upstream that accepts TCP and never answers (a black hole) uses
// its share, not the whole timeouts.connect, and the retry on the next
// candidate that the contract promises still happens.
func attemptDeadline(now, deadline time.Time, left int) time.Time {
	rest := deadline.Sub(now)
	if left <= 1 || rest <= minAttemptTimeout {
		return deadline
	}
	share := max(rest/time.Duration(left), minAttemptTimeout)
	return now.Add(share)
}

// reportDial tells the route's pool how the attempt on h went, when the
// outcome says something about h: not when the attempt was cut from
// outside (ctx: the client's handshake ended, the server closed) nor when
// the client's own offer made it fail.
func reportDial(ctx context.Context, r *Route, h *upstream.Host, err error) {
	rep, ok := r.Pool.(dialReporter)
	if !ok || err != nil && (ctx.Err() != nil || clientCaused(err)) {
		return
	}
	rep.ReportDial(h, err)
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
