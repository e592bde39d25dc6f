package httpbridge

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/snigate/snigate/names"
)

// policy is what a route lets through, checked in the contract's order:
// Host (421), method (405), repository (403).
type policy struct {
	route   string
	methods []string
	repos   repoAllowList
}

// refusal is a request the policy turned away before it reached the
// registry: the status, a reason for logs and metrics, and a message for
// the node that says what to change.
type refusal struct {
	status int
	reason string // host, method, repository
	msg    string
}

// check returns why r (whose connection's SNI is sni and whose path
// parsed as api) is refused, or nil.
func (p *policy) check(r *http.Request, sni string, api API) *refusal {
	if host := requestHost(r.Host); host != names.Canonical(sni) {
		return &refusal{http.StatusMisdirectedRequest, "host", fmt.Sprintf(
			"Host %q does not match the TLS server name %q of this connection: open a connection with the server name of the registry you address",
			r.Host, sni)}
	}
	if !slices.Contains(p.methods, r.Method) {
		return &refusal{http.StatusMethodNotAllowed, "method", fmt.Sprintf(
			"method %s is not allowed on route %q (allowed: %s): add it to routes[].http.methods to let nodes use it",
			r.Method, p.route, strings.Join(p.methods, ", "))}
	}
	if len(p.repos) == 0 || api.Kind == KindBase {
		return nil
	}
	if api.Repository == "" {
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"route %q allows only the repositories of routes[].http.repositories, and %s %s names none of them (kind %s)",
			p.route, r.Method, r.URL.Path, api.Kind)}
	}
	if !p.repos.allows(api.Repository) {
		return &refusal{http.StatusForbidden, "repository", fmt.Sprintf(
			"repository %q is not in the allow-list of route %q: add it (or a pattern such as \"team/*\") to routes[].http.repositories",
			api.Repository, p.route)}
	}
	return nil
}

// requestHost is the canonical host of a Host header, without its port.
func requestHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return names.Canonical(strings.Trim(host, "[]"))
}

// DefaultMethods are the methods of a zero Config.Methods: a read-only
// bridge.
func DefaultMethods() []string { return []string{http.MethodGet, http.MethodHead} }

// checkMethods validates configured methods: HTTP tokens in upper case.
func checkMethods(methods []string) error {
	for i, m := range methods {
		if m == "" || strings.ToUpper(m) != m || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) }) {
			return fmt.Errorf("methods[%d] %q: want an HTTP method in upper case, such as GET, HEAD, POST, PUT, PATCH or DELETE", i, m)
		}
	}
	return nil
}
