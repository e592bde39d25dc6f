package sni

import (
	"errors"
	"fmt"
	"strings"

	"github.com/snigate/snigate/names"
)

// How a server name picks a route: the rules of names (exact beats a
// one-label wildcard; case-insensitive; one trailing dot ignored), then
// the default route. A server name that is not a valid host name matches
// nothing, not even the default route.

// addNames adds r's SNI patterns to the table, reporting invalid patterns
// and names another route already has.
func (t *Table) addNames(i int, r *Route) []error {
	var errs []error
	for _, name := range r.SNI {
		err := t.patterns.Add(name, r)
		switch {
		case errors.Is(err, names.ErrDuplicate):
			prev, _ := t.patterns.Get(name)
			errs = append(errs, fmt.Errorf("routes[%d] %q: sni %q is already routed to %q", i, r.Name, name, prev.Name))
		case err != nil:
			errs = append(errs, fmt.Errorf("routes[%d] %q: sni: %w", i, r.Name, err))
		}
	}
	return errs
}

// Lookup returns the route for serverName: an exact name, else a
// wildcard, else the default route (also for a ClientHello without SNI).
// ok is false when none applies, and for a server name that is not a
// valid host name (names.IsHost): such a name never reaches the default
// route either.
func (t *Table) Lookup(serverName string) (r *Route, ok bool) {
	if serverName == "" {
		return t.def, t.def != nil
	}
	if !names.IsHost(serverName) {
		return nil, false
	}
	if r, ok := t.patterns.Lookup(serverName); ok {
		return r, true
	}
	return t.def, t.def != nil
}

// lookupName returns the route of a routed name: exact, else wildcard;
// never the default route.
func (t *Table) lookupName(name string) (*Route, bool) {
	return t.patterns.Lookup(name)
}

// refuseInvalidName ends a connection whose ClientHello names a server
// that is not a valid host name (names.IsHost): "*.reg.test", ".reg.test",
// a 300-byte label, an IP address. No route, not even the default route,
// is tried, so such a name never costs an upstream dial.
func (s *Server) refuseInvalidName(ss *session) error {
	name := ss.hello.ServerName
	if name == "" || names.IsHost(name) {
		return nil
	}
	err := fmt.Errorf("%w %q: not a valid host name: %v", ErrUnknownServerName, printableString(name), names.CheckHost(name))
	writeAlert(ss.conn, ss.hello.RecordVersion, alertUnrecognizedName)
	s.warnf(resultBadSNI, "the server name the client sent is not a valid DNS host name; refused before routing",
		"listener", ss.listener, "client", ss.clientString(), "sni", printableString(name), "err", err)
	return err
}

// refuseTrailingDot ends a bridge route's connection whose server name
// ends in a dot ("registry.example.com."): crypto/tls, which terminates
// the client's TLS on a bridge route, refuses such a ClientHello as
// malformed, so it is refused here, before any upstream dial, with a
// reason. A splice route passes it through (the name matched without its
// dot), as the contract's "trailing dot ignored" says.
func (s *Server) refuseTrailingDot(ss *session) error {
	name := ss.hello.ServerName
	if ss.route.Mode != ModeBridge || !strings.HasSuffix(name, ".") {
		return nil
	}
	err := fmt.Errorf("server name %q ends in a dot, which TLS forbids (RFC 6066) and a bridge route cannot terminate", name)
	writeAlert(ss.conn, ss.hello.RecordVersion, alertUnrecognizedName)
	s.warnf(resultBadSNI+"/trailing-dot/"+ss.route.Name,
		"the client sent a server name with a trailing dot to a bridge route: connect to the name without the final dot "+
			"(https://"+strings.TrimSuffix(name, ".")+"/), or make the route splice",
		"route", ss.route.Name, "client", ss.clientString(), "sni", name, "err", err)
	return err
}
