package httpbridge

import (
	"errors"
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// watchedBody records a read error of an upstream response body (the
// upstream dying mid-body) in the request's annotation.
type watchedBody struct {
	io.ReadCloser
	ann *oci.Annotation
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.ann.Fail(err, true)
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
