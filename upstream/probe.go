package upstream

import (
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ProbeConfig describes how `snigate check --probe` dials one upstream.
type ProbeConfig struct {
	// ServerName is the SNI, the name the server's certificate must cover
	// and the Host of HTTP requests; "": the host part of the address.
	ServerName string
	// ClientTLS is the client configuration of a bridge route (client
	// certificate, RootCAs); its ServerName is ignored. nil (splice
	// routes): the server is not verified and the mTLS step is skipped.
	ClientTLS *tls.Config
	// Check selects the HTTP step (Kind CheckHTTP) and its Path and
	// ExpectStatus, with the same defaults as a Pool's.
	Check Check
	// Timeout bounds each step; 0: DefaultTimeout.
	Timeout time.Duration
	// DialContext opens TCP connections; nil: a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// StepResult is the outcome of one probe step. Err says why a step failed
// or was skipped.
type StepResult struct {
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Err     string `json:"err,omitempty"`
}

// ProbeResult is what Probe learned about one upstream. Zero values mean
// "not learned": a step that did not run, a time not seen.
type ProbeResult struct {
	Addr string `json:"upstream"`
	// TCP: a connection was established.
	TCP StepResult `json:"tcp"`
	// TLS: a handshake without client certificate got past the server's
	// certificate (verified against ClientTLS's roots for bridge routes).
	TLS StepResult `json:"tls"`
	// MTLS: a handshake with ClientTLS's client certificate completed and
	// the server accepted the certificate. Skipped for splice routes.
	MTLS StepResult `json:"mtls"`
	// HTTP: GET Check.Path over an mTLS session (TLS for splice routes)
	// answered with a status in Check.ExpectStatus. Skipped unless the
	// check is http.
	HTTP StepResult `json:"http"`
	// ClientCertRequested: in the TLS step the server asked for a client
	// certificate; ClientCertRequired: it then refused the session
	// without one.
	ClientCertRequested bool `json:"client_cert_requested"`
	ClientCertRequired  bool `json:"client_cert_required"`
	// HTTPStatus is the status of the HTTP step.
	HTTPStatus int `json:"http_status,omitempty"`
	// Latency is TCP connect plus handshake of the mTLS step (the TLS
	// step for splice routes).
	Latency time.Duration `json:"latency,omitempty"`
	// CertNotAfter is the expiry of the server's leaf certificate.
	CertNotAfter time.Time `json:"cert_not_after,omitzero"`
	// AuthRealm is the realm of a `WWW-Authenticate: Bearer realm=...`
	// answer to GET /v2/ (http checks only), AuthRealmHost its host name,
	// lower case: a pull fetches its token there.
	AuthRealm     string `json:"auth_realm,omitempty"`
	AuthRealmHost string `json:"auth_realm_host,omitempty"`
	// RedirectHost is the host name of a 3xx Location in answer to
	// GET /v2/, set only when it differs from the server name.
	RedirectHost string `json:"redirect_host,omitempty"`
}

// prober runs the steps of one Probe.
type prober struct {
	addr string
	cfg  ProbeConfig
	dial dialFunc
}

// Probe dials addr step by step, TCP, TLS, mTLS and HTTP, each under
// cfg.Timeout, and reports what each step showed. A step that cannot run
// because an earlier one failed is skipped. Probe never returns an error:
// failures are in the result.
func Probe(ctx context.Context, addr string, cfg ProbeConfig) ProbeResult {
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	_ = checkDefaults(&cfg.Check) // invalid values keep their zero-value defaults
	pr := prober{addr: addr, cfg: cfg, dial: cfg.DialContext}
	if pr.dial == nil {
		pr.dial = new(net.Dialer).DialContext
	}
	r := ProbeResult{Addr: addr}
	pr.tcp(ctx, &r)
	if !r.TCP.OK {
		r.TLS, r.MTLS, r.HTTP = skipped("no TCP connection"), skipped("no TCP connection"), skipped("no TCP connection")
		return r
	}
	pr.tls(ctx, &r)
	pr.mtls(ctx, &r)
	pr.http(ctx, &r)
	return r
}

func (pr *prober) tcp(ctx context.Context, r *ProbeResult) {
	ctx, cancel := context.WithTimeout(ctx, pr.cfg.Timeout)
	defer cancel()
	r.TCP = result((&checker{dial: pr.dial}).tcp(ctx, pr.addr))
}

// tls handshakes without a client certificate. The step passes once the
// server's certificate is accepted, even when the server then refuses the
// session for want of a client certificate (ClientCertRequired).
func (pr *prober) tls(ctx context.Context, r *ProbeResult) {
	ctx, cancel := context.WithTimeout(ctx, pr.cfg.Timeout)
	defer cancel()
	var s session
	defer s.close()
	err := s.open(ctx, pr.dial, pr.addr, pr.base(), sessionOptions{noClientCert: true})
	if err == nil {
		err = s.confirm(ctx)
	}
	r.ClientCertRequested = s.requested
	r.ClientCertRequired = err != nil && s.verified && s.requested
	r.CertNotAfter = s.notAfter
	r.Latency = s.elapsed
	if s.verified {
		r.TLS = StepResult{OK: true}
	} else {
		r.TLS = result(err)
	}
}

// mtls handshakes with the client certificate and waits for the server's
// verdict on it.
func (pr *prober) mtls(ctx context.Context, r *ProbeResult) {
	if pr.cfg.ClientTLS == nil {
		r.MTLS = skipped("splice route: no client certificate")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, pr.cfg.Timeout)
	defer cancel()
	var s session
	defer s.close()
	err := s.open(ctx, pr.dial, pr.addr, pr.base(), sessionOptions{})
	if err == nil {
		err = s.confirm(ctx)
		r.Latency = s.elapsed
	}
	if !s.notAfter.IsZero() {
		r.CertNotAfter = s.notAfter
	}
	r.MTLS = result(err)
}

// http runs the HTTP check, then reads the registry's answer to GET /v2/
// for the token realm and redirects a pull will follow.
func (pr *prober) http(ctx context.Context, r *ProbeResult) {
	if pr.cfg.Check.Kind != CheckHTTP {
		r.HTTP = skipped("the health check is not http")
		return
	}
	resp, err := pr.get(ctx, pr.cfg.Check.Path)
	if err != nil {
		r.HTTP = result(err)
		return
	}
	r.HTTPStatus = resp.StatusCode
	c := checker{check: pr.cfg.Check}
	r.HTTP = result(c.statusErr(resp.StatusCode))
	if pr.cfg.Check.Path != DefaultPath {
		if resp, err = pr.get(ctx, DefaultPath); err != nil {
			return
		}
	}
	pr.registryInfo(resp, r)
}

// get sends GET path over a new session with the client certificate.
func (pr *prober) get(ctx context.Context, path string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, pr.cfg.Timeout)
	defer cancel()
	var s session
	defer s.close()
	if err := s.open(ctx, pr.dial, pr.addr, pr.base(), sessionOptions{nextProtos: []string{"http/1.1"}}); err != nil {
		return nil, err
	}
	return s.get(ctx, s.serverName, path)
}

// registryInfo fills AuthRealm, AuthRealmHost and RedirectHost from an
// answer to GET /v2/.
func (pr *prober) registryInfo(resp *http.Response, r *ProbeResult) {
	if realm := bearerRealm(resp.Header); realm != "" {
		r.AuthRealm = realm
		if u, err := url.Parse(realm); err == nil {
			r.AuthRealmHost = strings.ToLower(u.Hostname())
		}
	}
	loc := resp.Header.Get("Location")
	if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
		return
	}
	name := pr.serverName()
	base := &url.URL{Scheme: "https", Host: hostHeader(name), Path: DefaultPath}
	if u, err := base.Parse(loc); err == nil && u.Hostname() != "" && !strings.EqualFold(u.Hostname(), name) {
		r.RedirectHost = strings.ToLower(u.Hostname())
	}
}

// base returns the client configuration every TLS step clones.
func (pr *prober) base() *tls.Config {
	cfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // splice routes: the nodes' trust anchors are not ours
	if pr.cfg.ClientTLS != nil {
		cfg = pr.cfg.ClientTLS.Clone()
	}
	cfg.ServerName = pr.serverName()
	return cfg
}

func (pr *prober) serverName() string {
	return cmp.Or(pr.cfg.ServerName, hostOf(pr.addr))
}

func result(err error) StepResult {
	if err != nil {
		return StepResult{Err: err.Error()}
	}
	return StepResult{OK: true}
}

func skipped(why string) StepResult { return StepResult{Skipped: true, Err: why} }
