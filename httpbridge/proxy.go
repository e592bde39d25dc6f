package httpbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// newProxy is the route's proxy link (forward.go): rewrite sets the
// forwarding headers, the transport picks the upstream, modifyResponse
// watches the body, proxyError answers in OCI errors.
func (b *Bridge) newProxy() *forwarder {
	return &forwarder{
		rewrite:        b.rewrite,
		transport:      b.upstream,
		modifyResponse: b.modifyResponse,
		errorHandler:   b.proxyError,
		logf:           b.errLog.Printf,
	}
}

// rewrite prepares the upstream request: the Host the policy approved
// (ServeHTTP set it on the node's request), the URL's host chosen per
// attempt by the transport, and the forwarding headers (the forwarder
// dropped the node's own and the hop-by-hop ones).
func (b *Bridge) rewrite(in, out *http.Request) {
	out.URL.Scheme = "https"
	out.URL.Host = in.Host
	out.Host = in.Host
	out.Header.Del("Host") // an HTTP/2 node's Host header beside :authority
	if nc := connFrom(in.Context()); b.cfg.Forwarded && nc != nil {
		nc.fwd.Set(out.Header)
	}
}

// modifyResponse notes the response's digest and watches its body for an
// upstream failing mid-body.
func (b *Bridge) modifyResponse(resp *http.Response) error {
	ann := oci.AnnotationFrom(resp.Request.Context())
	ann.SetDigest(resp.Header.Get("Docker-Content-Digest"))
	resp.Body = &watchedBody{ReadCloser: resp.Body, ann: ann}
	return nil
}

// proxyError answers a request no upstream answered: 503 when none is
// healthy, else 502, with an OCI error body (NodeMessage); 400 when
// reading the node's request body failed (malformed chunked framing);
// nothing when the node left.
func (b *Bridge) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	ann := oci.AnnotationFrom(r.Context())
	if r.Context().Err() != nil {
		ann.Fail(fmt.Errorf("the node went away before the answer: %w", context.Cause(r.Context())), false)
		return
	}
	if berr := ann.BodyErr(); berr != nil {
		b.badBody(w, r, berr)
		return
	}
	ann.Fail(err, false)
	if !loggedUpstream(err) {
		b.warn.Log(b.log, slog.LevelWarn, "upstream", "http request failed upstream",
			"route", b.cfg.Route, "client", clientString(connFrom(r.Context())), "method", bound(r.Method, MaxAuditField),
			"path", bound(r.URL.Path, MaxAuditField), "status", oci.UpstreamStatus(err), "err", bound(err.Error(), MaxAuditError))
	}
	oci.WriteUpstreamError(w, err)
}

// loggedUpstream: err was logged where it happened: by the redirector
// (a redirect not followed) or by the AuthFunc's transport (the
// gateway's credentials refused, no token).
func loggedUpstream(err error) bool {
	return errors.Is(err, errRedirect) || errors.Is(err, oci.ErrCredentialsRefused) || errors.Is(err, oci.ErrTokenService)
}

// badBody answers a request whose body could not be read from the node
// (malformed chunked framing) with 400 and an OCI error body.
func (b *Bridge) badBody(w http.ResponseWriter, r *http.Request, err error) {
	oci.AnnotationFrom(r.Context()).Fail(err, false)
	b.warn.Log(b.log, slog.LevelWarn, "body", "http request body unreadable",
		"route", b.cfg.Route, "client", clientString(connFrom(r.Context())), "method", bound(r.Method, MaxAuditField),
		"path", bound(r.URL.Path, MaxAuditField), "status", http.StatusBadRequest, "err", bound(err.Error(), MaxAuditError))
	oci.WriteError(w, http.StatusBadRequest, oci.CodeUnsupported,
		"the request body could not be read (malformed chunked framing, or cut short): "+bound(err.Error(), MaxAuditError))
}
