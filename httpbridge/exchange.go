package httpbridge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
)

// exchange is what the upstream side of one node request learned, for
// its audit record: the upstream that answered, the response's digest,
// and what went wrong. Its methods are nil-safe (the gateway's own
// requests have none).
type exchange struct {
	mu       sync.Mutex
	upstream string
	digest   string // the response's Docker-Content-Digest
	err      error  // the first failure
	aborted  bool   // the upstream failed mid-body
	bodyErr  error  // reading the node's request body failed (its fault)
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func exchangeFrom(ctx context.Context) *exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*exchange)
	return ex
}

func (ex *exchange) setUpstream(addr string) {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	ex.upstream = addr
	ex.mu.Unlock()
}

func (ex *exchange) setDigest(d string) {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	ex.digest = d
	ex.mu.Unlock()
}

// fail records err unless an earlier failure is already recorded;
// upstream marks a failure of the upstream's body.
func (ex *exchange) fail(err error, upstream bool) {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	if ex.err == nil {
		ex.err = err
		ex.aborted = upstream
	}
	ex.mu.Unlock()
}

// failBody records a failure reading the node's request body: the
// request's failure, and the reason its answer is 400.
func (ex *exchange) failBody(err error) {
	if ex == nil {
		return
	}
	ex.mu.Lock()
	if ex.bodyErr == nil {
		ex.bodyErr = err
	}
	ex.mu.Unlock()
	ex.fail(err, false)
}

// nodeBodyErr is the failure reading the node's request body, or nil.
func (ex *exchange) nodeBodyErr() error {
	if ex == nil {
		return nil
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.bodyErr
}

// snapshot returns the fields at the end of the request.
func (ex *exchange) snapshot() (upstream, digest string, err error, aborted bool) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.upstream, ex.digest, ex.err, ex.aborted
}

// watchedBody records a read error of an upstream response body (the
// upstream dying mid-body) in the request's exchange.
type watchedBody struct {
	io.ReadCloser
	ex *exchange
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.ex.fail(err, true)
	}
	return n, err
}

// recorder is the node's ResponseWriter with the status and the body
// bytes written, and the first write error (the node gone). It unwraps
// for http.ResponseController (ReverseProxy flushes through it).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	err    error
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
