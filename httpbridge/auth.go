package httpbridge

import (
	"net/http"
)

// AuthFunc puts the gateway's registry credentials on a route's upstream
// leg (routes[].http.auth). Given upstream, the route's client (healthy
// upstreams in the pool's order, retries, redirects followed as the
// route says), and tokens, the transport a followed redirect uses
// (system roots plus RedirectRoots, no client certificate, the redirect
// address guard: what the registry's token service is reached with), it
// returns the RoundTripper the proxy and the links send through. The
// gateway gives a regauth.Transport over upstream with tokens as its
// TokenTransport.
//
// With it, the node's Authorization is dropped before the policy looks
// at the request (the route's methods, repositories and node identity
// decide who may use the gateway's credentials), and audit records say
// "auth":"gateway". An error of the returned RoundTripper that is
// oci.ErrCredentialsRefused answers the node 401 UNAUTHORIZED
// (oci.CredentialsRefusedMessage); one that is oci.ErrTokenService, 502
// with oci.TokenFailedMessage. Both are the RoundTripper's to log.
type AuthFunc func(upstream, tokens http.RoundTripper) http.RoundTripper

// Values of an audit record's auth.
const (
	AuthGateway = "gateway" // the gateway's credentials (routes[].http.auth)
	AuthNode    = "node"    // the node sent an Authorization, passed to the registry
	AuthNone    = ""        // neither
)

// authUpstream is the RoundTripper of the proxy and the links: the
// client, under AuthFunc when the route has one.
func (b *Bridge) authUpstream() http.RoundTripper {
	if b.cfg.AuthFunc == nil {
		return b.client
	}
	if b.client.follow != nil {
		return b.cfg.AuthFunc(b.client, b.client.follow.transport)
	}
	b.tokens = newRedirector(&b.cfg).transport // redirects: pass; the token service is still reached as a redirect is
	return b.cfg.AuthFunc(b.client, b.tokens)
}

// authOf takes the node's Authorization off r on an auth route, before
// anything reads it, and returns the audit record's auth.
func (b *Bridge) authOf(r *http.Request) string {
	if b.cfg.AuthFunc != nil {
		r.Header.Del("Authorization")
		return AuthGateway
	}
	if r.Header.Get("Authorization") != "" {
		return AuthNode
	}
	return AuthNone
}
