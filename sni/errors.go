package sni

import (
	"errors"
	"fmt"

	"github.com/snigate/snigate/upstream"
)

// Sentinel errors. Each is produced in this package and wrapped with the
// detail of what was received; test with errors.Is.
var (
	// ErrNotTLS: the first bytes of a connection are not a TLS handshake
	// record. A *PlainHTTPError also matches it.
	ErrNotTLS = errors.New("not TLS")
	// ErrClientHelloTooLarge: a TLS record or the ClientHello message is
	// larger than TLS allows; it is rejected before the bytes are buffered.
	ErrClientHelloTooLarge = errors.New("ClientHello too large")
	// ErrUnknownServerName: no route matches the ClientHello's server name
	// and there is no default route.
	ErrUnknownServerName = errors.New("no route for server name")
	// ErrNoHealthyUpstream: the route's pool has no candidate to dial;
	// it is upstream.ErrNoHealthy, declared once.
	ErrNoHealthyUpstream = upstream.ErrNoHealthy
	// ErrServerClosed is returned by Serve after Shutdown or Close.
	ErrServerClosed = errors.New("sni: server closed")
)

// errBadHello marks a ClientHello that is malformed or truncated.
var errBadHello = errors.New("malformed ClientHello")

// errUnexpectedProxyHeader marks a PROXY protocol header from a source that
// is not in ProxyProtocolFrom.
var errUnexpectedProxyHeader = errors.New("PROXY protocol header from a source not in listen.proxy_protocol_from")

// PlainHTTPError is returned by ReadClientHello when a connection starts
// with an HTTP request instead of a TLS ClientHello: a client speaking
// http:// to the TLS port, or an HTTP CONNECT (HTTPS_PROXY pointed at the
// TLS port). errors.Is(err, ErrNotTLS) is true for it.
type PlainHTTPError struct {
	Method      string // "GET", "CONNECT", ...
	RequestLine string // the first line received, truncated and without CR LF
}

func (e *PlainHTTPError) Error() string {
	if e.Method == "CONNECT" {
		return fmt.Sprintf("received an HTTP CONNECT request (%q) on a TLS port: HTTPS_PROXY probably points at the TLS listener", e.RequestLine)
	}
	return fmt.Sprintf("received plain HTTP (%q) on a TLS port: use https:// instead of http://", e.RequestLine)
}

// Is reports that a PlainHTTPError is a kind of ErrNotTLS.
func (e *PlainHTTPError) Is(target error) bool { return target == ErrNotTLS }
