package doctor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// client is the HTTP client of the http, realm and redirect steps: the
// node's trust, names resolved as the node resolves them (NAME to the
// address that passed tcp), h2 when offered, no redirect followed.
func (r *run) client() *http.Client {
	if r.httpc != nil {
		return r.httpc
	}
	cfg := r.tls.Clone()
	cfg.ServerName = "" // each request's own host
	tr := &http.Transport{DialContext: r.dialName, TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	r.httpc = &http.Client{Transport: tr, Timeout: r.cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return r.httpc
}

// dialName dials host:port after a lookup the way the node does it.
func (r *run) dialName(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addr := r.addr
	if !strings.EqualFold(host, r.t.host) || port != strconv.Itoa(r.t.port) {
		addrs, _, err := r.lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("lookup %s: %w", host, err)
		}
		addr = net.JoinHostPort(addrs[0].String(), port)
	}
	d := net.Dialer{Timeout: r.cfg.Timeout}
	return d.DialContext(ctx, network, addr)
}

// http is step "http": GET /v2/, the registry API's root, through the
// gateway; a 401 names the token realm the next step checks.
func (r *run) http(ctx context.Context) bool {
	u := "https://" + r.t.registry() + "/v2/"
	resp, _, err := r.get(ctx, u, nil)
	if err != nil {
		r.report(Result{Status: Fail, Step: "http", Found: "GET " + u + ": " + err.Error(), Advice: r.useAdvice(err, r.t.host)})
		return false
	}
	found := fmt.Sprintf("GET /v2/: %d (%s)", resp.StatusCode, resp.Proto)
	switch ch := parseChallenge(resp.Header.Get("WWW-Authenticate")); {
	case resp.StatusCode == http.StatusOK:
		r.report(Result{Status: OK, Step: "http", Found: found + ", no token needed"})
	case resp.StatusCode == http.StatusUnauthorized && ch.scheme == "bearer" && ch.params["realm"] != "":
		r.realm = &ch
		r.report(Result{Status: OK, Step: "http", Found: fmt.Sprintf("%s, token realm %s", found, ch.params["realm"])})
	case resp.StatusCode == http.StatusUnauthorized:
		r.report(Result{Status: Warn, Step: "http", Found: found + ", WWW-Authenticate " + strconv.Quote(resp.Header.Get("WWW-Authenticate")),
			Advice: "the registry wants credentials: give the runtime a pull secret (imagePullSecrets) or allow anonymous pulls"})
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		r.report(Result{Status: Fail, Step: "http", Found: found, Advice: "the gateway reaches no registry for " + r.t.host + ": on the gateway, run snigate ctl upstreams and read its log"})
		return false
	default:
		r.report(Result{Status: Fail, Step: "http", Found: found, Advice: "this is not a registry's API root: check the route's upstreams (and upstream_tls.server_name)"})
		return false
	}
	return true
}

// maxBody bounds what get reads of a body (a manifest, a token).
const maxBody = 4 << 20

// get GETs u with the headers hdr and returns the response with its body
// read (at most maxBody bytes) and closed.
func (r *run) get(ctx context.Context, u string, hdr http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := r.client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp, body, err
}

// challenge is a WWW-Authenticate challenge: scheme (lower case) and
// parameters.
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenge reads `Bearer realm="...",service="..."` (RFC 7235
// auth-params, quoted or token values).
func parseChallenge(h string) challenge {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	ch := challenge{scheme: strings.ToLower(scheme), params: map[string]string{}}
	for rest = strings.TrimSpace(rest); rest != ""; {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(k), ",")))
		v, rest = paramValue(strings.TrimSpace(v))
		ch.params[k] = v
		rest = strings.TrimPrefix(strings.TrimSpace(rest), ",")
	}
	return ch
}

// paramValue splits a quoted string or token from the rest.
func paramValue(s string) (val, rest string) {
	if !strings.HasPrefix(s, `"`) {
		val, rest, _ = strings.Cut(s, ",")
		return strings.TrimSpace(val), rest
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}
