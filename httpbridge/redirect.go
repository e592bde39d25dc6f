package httpbridge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/snigate/snigate/internal/ratelog"
	"github.com/snigate/snigate/oci"
)

// redirector fetches what a registry's redirect to another host (blob
// storage, a CDN) points at, so that nodes need no route to that host:
// GET and HEAD only, at most MaxRedirects hops, trusting
// Config.RedirectRoots, with no client certificate and no Authorization,
// and never to an address its guard refuses. A failure is logged here
// (rate-limited) and told to the node in generic words (NodeMessage).
type redirector struct {
	cfg       *Config
	transport *http.Transport
	warn      ratelog.Limiter
}

// errRedirect marks a failure while following a redirect (502; the node
// is told oci.RedirectFailedMessage).
var errRedirect = oci.ErrRedirect

// redirectHeaders are the node's request headers sent on to the foreign
// host; Authorization, cookies and the forwarding headers are not.
var redirectHeaders = []string{"Accept", "Accept-Encoding", "Range", "If-Range", "If-Match", "If-None-Match",
	"If-Modified-Since", "If-Unmodified-Since", "User-Agent"}

func newRedirector(cfg *Config) *redirector {
	guard := &redirectGuard{allow: cfg.RedirectAllow, ownAddrs: net.InterfaceAddrs}
	return &redirector{cfg: cfg, transport: &http.Transport{
		DialContext:           guard.dialFunc(cfg.DialContext),
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RedirectRoots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   DefaultMaxIdleConnsPerHost,
		IdleConnTimeout:       DefaultUpstreamIdleTimeout,
		DisableCompression:    true,
		HTTP2:                 &http.HTTP2Config{MaxReceiveBufferPerStream: upstreamStreamBuffer},
	}}
}

// isRedirect: a 3xx the client would follow, with a Location.
func isRedirect(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
}

// foreign reports whether resp, the answer to req, redirects a GET or
// HEAD to a host other than the registry's: redirects within the
// registry (upload sessions, relative locations) go to the node.
func (r *redirector) foreign(req *http.Request, resp *http.Response) bool {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return false
	}
	loc, err := location(registryURL(req), resp)
	if err != nil {
		return true // follow reports it
	}
	return !sameHost(loc.Host, req.Host) && !sameHost(loc.Host, resp.Request.URL.Host)
}

// registryURL is the URL of req as the node addressed it: the base of
// the registry's relative redirects.
func registryURL(req *http.Request) *url.URL {
	return &url.URL{Scheme: "https", Host: req.Host, Path: req.URL.Path}
}

// location is resp's Location resolved against base, the URL resp
// answered.
func location(base *url.URL, resp *http.Response) (*url.URL, error) {
	loc, err := base.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("%w: Location %q: %w", errRedirect, resp.Header.Get("Location"), err)
	}
	return loc, nil
}

// sameHost compares two host[:port] values, the port defaulting to 443.
func sameHost(a, b string) bool {
	return requestHost(a) == requestHost(b) && portOf(a) == portOf(b)
}

func portOf(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return p
	}
	return "443"
}

// follow fetches the chain of redirects that resp starts and returns the
// final answer, keeping the registry's Docker-Content-Digest.
func (r *redirector) follow(req *http.Request, resp *http.Response) (*http.Response, error) {
	digest := resp.Header.Get("Docker-Content-Digest")
	base := registryURL(req)
	for hop := 1; ; hop++ {
		loc, err := location(base, resp)
		drain(resp)
		if err != nil {
			return r.failed(req, err)
		}
		if hop > MaxRedirects {
			return r.failed(req, fmt.Errorf("%w: more than %d redirects (last to %s)", errRedirect, MaxRedirects, redacted(loc)))
		}
		if resp, err = r.fetch(req, loc); err != nil {
			return r.failed(req, err)
		}
		base = loc
		if !isRedirect(resp) {
			break
		}
	}
	if digest != "" && resp.Header.Get("Docker-Content-Digest") == "" {
		resp.Header.Set("Docker-Content-Digest", digest)
	}
	r.cfg.Metrics.redirect(r.cfg.Route, RedirectFollowed)
	return resp, nil
}

// failed counts a redirect that could not be followed, refused (its
// target address) or failed, and logs it unless the node went away.
func (r *redirector) failed(req *http.Request, err error) (*http.Response, error) {
	result, msg := RedirectFailed, "following the registry's redirect failed"
	if errors.Is(err, errRedirectTarget) {
		result, msg = RedirectRefused, "the registry's redirect was not followed: its target address is refused"
	}
	r.cfg.Metrics.redirect(r.cfg.Route, result)
	if req.Context().Err() != nil {
		return nil, err
	}
	r.warn.Log(r.cfg.Log, slog.LevelWarn, result, msg, "route", r.cfg.Route,
		"client", clientString(connFrom(req.Context())), "method", bound(req.Method, MaxAuditField),
		"path", bound(req.URL.Path, MaxAuditField), "result", result, "err", bound(err.Error(), MaxAuditError))
	return nil, err
}

// fetch requests loc with the node's method and its allowed headers.
func (r *redirector) fetch(req *http.Request, loc *url.URL) (*http.Response, error) {
	if loc.Scheme != "https" {
		return nil, fmt.Errorf("%w: the registry redirected to %s: only https locations are followed", errRedirect, redacted(loc))
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, loc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRedirect, err)
	}
	for _, k := range redirectHeaders {
		if v := req.Header.Values(k); len(v) > 0 {
			out.Header[k] = v
		}
	}
	if out.Header.Get("User-Agent") == "" {
		out.Header["User-Agent"] = nil // no Go default
	}
	resp, err := r.transport.RoundTrip(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errRedirect, redacted(loc), err)
	}
	return resp, nil
}

// drain reads a little of a body that is not passed on, so that its
// connection can be reused, and closes it.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

// redacted is a URL for logs without its query (presigned URLs carry
// credentials there).
func redacted(u *url.URL) string {
	s := *u
	s.RawQuery = ""
	return strings.TrimSuffix(s.Redacted(), "?")
}
