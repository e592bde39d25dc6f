package httpbridge

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/oci"
)

// policy is what a route lets through, checked in the contract's order:
// Host (421), method (405), repository (403).
type policy struct {
	route   string
	methods []string
	repos   oci.RepoAllowList
}

// refusal is a request the policy turned away before it reached the
// registry: the status, a reason for logs and metrics, and a message for
// the node that says what to change.
type refusal struct {
	status int
	reason string // host, method, repository
	msg    string
}

// check returns the Host the registry gets for r (whose connection's
// SNI is sni, accepted on listener port port, and whose path parsed as
// api), or why r is refused.
func (p *policy) check(r *http.Request, sni string, port int, api oci.API) (string, *refusal) {
	host, ok := upstreamHost(r.Host, sni, port)
	if !ok {
		return "", &refusal{http.StatusMisdirectedRequest, "host", fmt.Sprintf(
			"Host %q does not match the TLS server name %q of this connection: open a connection with the server name of the registry you address (the name itself, or name:443)",
			r.Host, sni)}
	}
	return host, p.checkRequest(r, api)
}

// checkRequest returns why r, whose Host was admitted, is refused by the
// route's methods or repositories, or nil.
func (p *policy) checkRequest(r *http.Request, api oci.API) *refusal {
	if !slices.Contains(p.methods, r.Method) {
		return &refusal{http.StatusMethodNotAllowed, "method", fmt.Sprintf(
			"method %s is not allowed on route %q (allowed: %s): add it to routes[].http.methods to let nodes use it",
			r.Method, p.route, strings.Join(p.methods, ", "))}
	}
	if len(p.repos) == 0 || api.Kind == oci.KindBase {
		return nil
	}
	if api.Repository == "" {
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"route %q allows only the repositories of routes[].http.repositories, and %s %s names none of them (kind %s)",
			p.route, r.Method, r.URL.Path, api.Kind)}
	}
	if !p.repos.Allows(api.Repository) {
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"repository %q is not in the allow-list of route %q: add it (or a pattern such as \"team/*\") to routes[].http.repositories",
			api.Repository, p.route)}
	}
	return p.checkMount(api)
}

// checkMount returns why a cross-repository blob mount is refused under
// the allow-list: its source repository (from) is outside it, or it names
// none (the registry may then mount from any repository it chooses).
func (p *policy) checkMount(api oci.API) *refusal {
	switch {
	case api.From != "" && !p.repos.Allows(api.From):
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"repository %q (the from of a blob mount into %q) is not in the allow-list of route %q: add it to routes[].http.repositories, or push the blob itself",
			api.From, api.Repository, p.route)}
	case api.Mount != "" && api.From == "":
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"a blob mount into %q names no repository to mount from, and route %q allows only the repositories of routes[].http.repositories: name it with from=",
			api.Repository, p.route)}
	}
	return nil
}

// upstreamHost is the Host the registry gets for a node's Host header
// hostport on a connection whose SNI is sni, accepted on listener port
// port: the SNI's canonical name, with ":port" only when the node
// addressed the listener's own port and that is not 443. false for any
// other form: another name, a trailing dot, brackets, an empty or other
// port, no SNI. The check and what the registry sees are one value, so a
// front that routes on Host (a default backend) cannot be steered to
// another virtual host by a form the check normalised away. The name's
// ASCII letters match in any case.
func upstreamHost(hostport, sni string, port int) (string, bool) {
	name := names.Canonical(sni)
	host, p, hasPort := strings.Cut(hostport, ":")
	if name == "" || strings.HasSuffix(host, ".") || names.Canonical(host) != name {
		return "", false
	}
	switch {
	case !hasPort || p == "443":
		return name, true
	case port != 443 && p == strconv.Itoa(port):
		return name + ":" + p, true
	}
	return "", false
}

// requestHost is the canonical host of a host[:port] value without its
// port, for comparing redirect locations (never for admitting a request:
// see upstreamHost).
func requestHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return names.Canonical(strings.Trim(host, "[]"))
}
