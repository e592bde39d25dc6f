package sni

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// Results of bridge connections refused before any upstream dial.
const (
	resultTLSVersion  = "tls_version"      // no TLS version the route serves: alert protocol_version
	resultNoCipher    = "no_shared_cipher" // no cipher suite the route serves: alert handshake_failure
	resultNameRefused = "name_refused"     // the route's certificate source refuses the name: alert unrecognized_name
	resultMintLimit   = "mint_limit"       // the client mints new names too fast: alert internal_error
)

// alertProtocolVersion is sent when no TLS version both sides speak
// meets the route's serve settings.
const alertProtocolVersion = 70

// nameChecker is the optional capability of a route's certificate source
// that knows, before a handshake, which names it will not serve: a minter
// refuses names outside its route or its CA's constraints, and a client
// that asks for new names too fast. An error with a Temporary method that
// reports true is a rate limit (the name may be served later); any other
// error refuses the name.
type nameChecker interface {
	CheckName(hello *tls.ClientHelloInfo) error
}

// helloRefusal is what the pre-dial check decided: the connection's result,
// the alert to send and why.
type helloRefusal struct {
	result string
	alert  uint8
	err    error
	advice string
}

// refuse checks the ClientHello against the route before anything is
// dialed: a hello that crypto/tls would refuse for its versions or cipher
// suites, or whose name the route's certificate source will not serve,
// gets its alert at once and costs no upstream handshake. It reports
// whether the connection was refused (and recorded).
func (t *bridgeTarget) refuse(bc *bridgeConn) bool {
	r := t.ss.route.check(&t.ss.hello)
	if r == nil {
		r = t.checkName(bc)
	}
	if r == nil {
		return false
	}
	writeAlert(t.ss.conn, t.ss.hello.RecordVersion, r.alert)
	t.ss.end(r.result, r.err)
	t.s.warnf(r.result+"/"+t.ss.route.Name, r.advice,
		"route", t.ss.route.Name, "client", t.ss.clientString(), "sni", t.ss.hello.ServerName, "err", r.err)
	return true
}

// check applies the route's serve versions and TLS 1.2 suites to hello.
func (r *Route) check(hello *ClientHello) *helloRefusal {
	v, ok := r.serveVersion(hello)
	if !ok {
		return &helloRefusal{result: resultTLSVersion, alert: alertProtocolVersion,
			err: fmt.Errorf("client offers %s; route %q serves %s to TLS 1.3", versionList(hello),
				r.Name, tls.VersionName(max(r.ServeMinVersion, tls.VersionTLS12))),
			advice: "ClientHello refused before dialing: the client offers no TLS version the route serves; upgrade the client or lower serve.min_version"}
	}
	suites := tls13Suites
	if v == tls.VersionTLS12 {
		if suites = r.ServeCipherSuites; suites == nil {
			suites = DefaultServeCipherSuites
		}
	}
	if !hello.suites.hasAny(suites) {
		return &helloRefusal{result: resultNoCipher, alert: alertHandshakeFailure,
			err:    fmt.Errorf("client offers none of the %s cipher suites route %q serves", tls.VersionName(v), r.Name),
			advice: "ClientHello refused before dialing: no cipher suite in common; enable AEAD suites on the client or widen serve.cipher_suites"}
	}
	return nil
}

// serveVersion is the TLS version crypto/tls would negotiate with hello
// on this route: the highest the client supports from the route's minimum
// (TLS 1.2 at least) to TLS 1.3. Without supported_versions, the client
// supports every version up to legacy_version, at most TLS 1.2.
func (r *Route) serveVersion(hello *ClientHello) (uint16, bool) {
	lo := max(r.ServeMinVersion, tls.VersionTLS12)
	var best uint16
	if hello.SupportedVersions == nil {
		best = min(hello.Version, tls.VersionTLS12)
	}
	for _, v := range hello.SupportedVersions {
		if v <= tls.VersionTLS13 && v > best {
			best = v
		}
	}
	return best, best >= lo
}

// versionList names what the client offers, for the helloRefusal's error.
func versionList(hello *ClientHello) string {
	if hello.SupportedVersions == nil {
		return "up to " + tls.VersionName(hello.Version)
	}
	s := ""
	for _, v := range hello.SupportedVersions {
		if v&0x0f0f == 0x0a0a {
			continue // GREASE
		}
		if s != "" {
			s += ", "
		}
		s += tls.VersionName(v)
	}
	return "[" + s + "]"
}

// checkName asks the route's certificate source, when it can tell,
// whether it will serve the hello's name to this client.
func (t *bridgeTarget) checkName(bc *bridgeConn) *helloRefusal {
	nc, ok := t.ss.route.Serve.(nameChecker)
	if !ok {
		return nil
	}
	h := &t.ss.hello
	err := nc.CheckName(&tls.ClientHelloInfo{ServerName: h.ServerName, SupportedProtos: h.ALPN,
		SupportedVersions: h.SupportedVersions, Conn: bc})
	if err == nil {
		return nil
	}
	var tmp interface{ Temporary() bool }
	if errors.As(err, &tmp) && tmp.Temporary() {
		return &helloRefusal{result: resultMintLimit, alert: alertInternalError, err: err,
			advice: "ClientHello refused before dialing: this client asks for new certificate names faster than the minter allows"}
	}
	return &helloRefusal{result: resultNameRefused, alert: alertUnrecognizedName, err: err,
		advice: "ClientHello refused before dialing: the route's certificate source does not serve this name; check the route's sni and serve.ca_cert constraints"}
}
