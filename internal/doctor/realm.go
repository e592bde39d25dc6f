package doctor

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
)

// realmStep is step "realm": the token service GET /v2/ named must be
// reachable from the node too, which on a node without a route outside
// means through the gateway: its host resolves to the gateway and the
// gateway routes its name.
func (r *run) realmStep(ctx context.Context) bool {
	if r.realm == nil {
		r.report(Result{Status: OK, Step: "realm", Found: "none: the registry asks for no token"})
		return true
	}
	realm := r.realm.params["realm"]
	u, err := url.Parse(realm)
	if err != nil || u.Host == "" {
		r.report(Result{Status: Fail, Step: "realm", Found: fmt.Sprintf("realm %q is not a URL", realm), Advice: "fix the registry's token realm (auth.token.realm)"})
		return false
	}
	q := u.Query()
	if s := r.realm.params["service"]; s != "" {
		q.Set("service", s)
	}
	u.RawQuery = q.Encode()
	res := r.otherHost(ctx, "realm", u)
	r.report(res)
	return res.Status != Fail
}

// otherHost checks a host a pull also touches (token realm, blob
// redirect): it resolves as the node resolves it, to the gateway's
// addresses, and a GET of u gets an HTTP answer below 500.
func (r *run) otherHost(ctx context.Context, step string, u *url.URL) Result {
	host := u.Hostname()
	if r.isTarget(u) {
		return Result{Status: OK, Step: step, Found: u.Redacted() + " is on " + r.t.registry() + " itself"}
	}
	addrs, src, err := r.lookup(ctx, host)
	if err != nil {
		return Result{Status: Fail, Step: step, Found: fmt.Sprintf("%s (from %s): %s does not resolve: %v", u.Redacted(), r.t.registry(), host, err),
			Advice: routeAdvice(host)}
	}
	via := "the gateway"
	if !overlaps(addrs, r.addrs) {
		via = "not the gateway (" + joinAddrs(r.addrs) + ")"
	}
	resp, _, err := r.get(ctx, u.String(), nil)
	if err != nil {
		return Result{Status: Fail, Step: step, Found: fmt.Sprintf("%s resolves to %s (%s, from %s); GET %s: %v", host, joinAddrs(addrs), via, src, u.Redacted(), err),
			Advice: otherHostAdvice(err, host, via == "the gateway")}
	}
	found := fmt.Sprintf("%s resolves to %s (%s); GET %s: %d", host, joinAddrs(addrs), via, u.Redacted(), resp.StatusCode)
	if resp.StatusCode >= 500 {
		return Result{Status: Fail, Step: step, Found: found, Advice: "the service behind " + host + " fails: see the gateway's log and the route's upstreams"}
	}
	if via != "the gateway" {
		return Result{Status: Warn, Step: step, Found: found + ", reached directly", Advice: "works from here, but bypasses the gateway: " + routeAdvice(host)}
	}
	return Result{Status: OK, Step: step, Found: found}
}

// isTarget reports whether u is on NAME's own host and port.
func (r *run) isTarget(u *url.URL) bool {
	port := u.Port()
	if port == "" {
		port = strconv.Itoa(DefaultPort)
	}
	return net.JoinHostPort(u.Hostname(), port) == r.t.hostPort()
}

func routeAdvice(host string) string {
	return "send " + host + " through the gateway too: add it to a route's sni on the gateway (a bridge or splice route to that service), so that its DNS answers it with the gateway; or, for blob hosts, set the route's http.redirects: follow"
}

func otherHostAdvice(err error, host string, viaGateway bool) string {
	if viaGateway {
		return handshakeAdvice(err, host)
	}
	return "the node cannot reach " + host + " directly: " + routeAdvice(host)
}
