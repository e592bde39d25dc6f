package upstream

import (
	"errors"
	"fmt"
)

// State is the administrative state of an upstream, set by the operator
// through the runtime API. It is independent of health: a host receives new
// connections only when it is both healthy and StateReady.
type State string

// The administrative states (docs/operations.md, "Runtime API").
const (
	// StateReady is normal operation: new connections when healthy.
	StateReady State = "ready"
	// StateDrain takes no new connections; established ones continue and
	// health checks continue.
	StateDrain State = "drain"
	// StateMaint takes no new connections and pauses health checks; the
	// last known health is kept and the first check runs as soon as the
	// host leaves maint.
	StateMaint State = "maint"
)

// ErrInvalidState is wrapped by the error ParseState and Pool.SetState return
// for a state that is not ready, drain or maint (the admin API answers 400).
var ErrInvalidState = errors.New("invalid upstream state")

// ParseState returns the State named s: exactly "ready", "drain" or "maint".
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateReady, StateDrain, StateMaint:
		return st, nil
	}
	return "", fmt.Errorf("%w %q: want ready, drain or maint", ErrInvalidState, s)
}

// CheckKind names an active health check.
type CheckKind string

// The health checks (config key routes[].health.check).
const (
	// CheckTCP passes when a TCP connection is established.
	CheckTCP CheckKind = "tcp"
	// CheckTLS passes when a full TLS handshake completes with the
	// configuration real connections use, including the server's
	// acceptance of our client certificate.
	CheckTLS CheckKind = "tls"
	// CheckHTTP passes when GET Path over such a TLS session answers with
	// a status in ExpectStatus.
	CheckHTTP CheckKind = "http"
)

// Balance names a selection policy.
type Balance string

// The selection policies (config key routes[].balance).
const (
	// RoundRobin rotates the first host to try on every call.
	RoundRobin Balance = "roundrobin"
	// LeastConn tries the host with the fewest active connections first;
	// ties are broken round-robin.
	LeastConn Balance = "leastconn"
)
