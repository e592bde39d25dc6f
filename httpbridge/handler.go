package httpbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/snigate/snigate/oci"
)

// ServeHTTP serves one node request: the policy's refusals in the
// contract's order, then the chain (Config.Chain: the cache when the
// route has one) over the reverse proxy to the registry; one audit record and the http metrics
// at the end, also when the response is aborted.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nc := connFrom(r.Context())
	if nc == nil || !nc.begin() {
		return
	}
	auth := b.authOf(r)
	api := oci.ParseURL(r.URL)
	rq := &request{start: time.Now(), api: api, rec: newRecorder(w, r.ProtoMajor), ann: oci.NewAnnotation(api), auth: auth}
	b.metrics.begin()
	defer b.finish(r, nc, rq)
	host, ref := b.policy.check(r, nc.SNI, nc.port, rq.api)
	if ref != nil {
		b.refuse(rq, r, nc, ref)
		return
	}
	r = r.WithContext(oci.WithAnnotation(r.Context(), rq.ann)) // a copy: net/http's own request stays as it came
	r.Host = host                                              // what the registry gets is what the check approved
	if err := prereadBody(r, rq.ann); err != nil {
		b.badBody(rq.rec, r, err)
		return
	}
	if r.Context().Err() != nil { // an HTTP/2 stream the node reset already
		rq.ann.Fail(fmt.Errorf("the node went away before the request was forwarded: %w", context.Cause(r.Context())), false)
		return
	}
	b.next.ServeHTTP(rq.rec, r)
}

// request is one node request being served.
type request struct {
	start time.Time
	api   oci.API
	rec   *recorder       // &w
	ann   *oci.Annotation // the facts the links report
	// refusal is the policy's reason when the gateway refused the
	// request itself, for the audit's aggregation.
	refusal string
	auth    string // AuthGateway, AuthNode or AuthNone
}

// refuse answers a refused request with the OCI error DENIED.
func (b *Bridge) refuse(rq *request, r *http.Request, nc *nodeConn, ref *refusal) {
	rq.ann.Fail(errors.New("refused: "+ref.msg), false)
	rq.refusal = ref.reason
	b.metrics.refusal(ref.reason)
	b.warn.Log(b.log, slog.LevelWarn, "refused/"+ref.reason, "http request refused",
		"route", b.cfg.Route, "client", clientString(nc), "node", bound(nc.Node, MaxAuditField),
		"method", bound(r.Method, MaxAuditField), "host", bound(r.Host, MaxAuditField),
		"path", bound(r.URL.Path, MaxAuditField), "status", ref.status, "reason", ref.reason)
	if ref.status == http.StatusMethodNotAllowed {
		rq.rec.Header().Set("Allow", strings.Join(b.policy.methods, ", "))
	}
	oci.WriteError(rq.rec, ref.status, oci.CodeDenied, bound(ref.msg, MaxAuditError)) // it may quote the node's Host or path
}

// finish counts the request and writes its audit record. It runs
// deferred, so also when the forwarder aborts the response (a panic with
// http.ErrAbortHandler, which it passes on).
func (b *Bridge) finish(r *http.Request, nc *nodeConn, rq *request) {
	p := recover()
	rq.rec.end(p != nil) // the last bytes of an HTTP/2 body, before the record counts them
	facts := rq.ann.Facts()
	up, digest, err, aborted := facts.Upstream, facts.Digest, facts.Err, facts.Aborted
	if err == nil && rq.rec.err != nil {
		err = rq.rec.err
	}
	if p != nil && p != http.ErrAbortHandler {
		b.log.Error("panic serving an http request", "route", b.cfg.Route, "method", bound(r.Method, MaxAuditField),
			"path", bound(r.URL.Path, MaxAuditField),
			"panic", p, "stack", string(debug.Stack()))
		err, p = fmt.Errorf("internal error: %v", p), http.ErrAbortHandler
	}
	d := time.Since(rq.start)
	b.metrics.done(rq.api.Kind, rq.rec.status, d)
	if rq.api.Digest != "" {
		digest = rq.api.Digest
	} else if digest == "" {
		digest = rq.api.Mount
	}
	rec := &AuditRecord{ // on the stack: Audit.Write keeps no pointer to it
		Time: rq.start, Route: b.cfg.Route, Client: clientString(nc), Node: nc.Node, Method: r.Method,
		API: rq.api, Digest: digest, Status: rq.rec.status, Bytes: rq.rec.bytes, Duration: d,
		Cache: facts.Cache, Signature: facts.Signature, Upstream: up, Auth: rq.auth, Refusal: rq.refusal, Conn: nc.ID,
	}
	nc.UsedUpstream(up)
	if err != nil {
		rec.Error = err.Error()
	}
	b.cfg.Audit.Write(rec)
	nc.end(aborted && p != nil)
	if p != nil {
		panic(p)
	}
}

// clientString is the node's address as ip:port.
func clientString(nc *nodeConn) string {
	if nc == nil {
		return ""
	}
	return nc.addr
}
