package httpbridge

import (
	"errors"
	"io"
	"math"
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
// for http.ResponseController (the forwarder flushes through it, via
// FlushError). On HTTP/2 it gathers the body into whole frames
// (h2Frames); end sends what is left.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64 // body bytes the node's connection took
	err    error
	h2     bool     // HTTP/2: the body goes through frames; else as it comes
	frames h2Frames // HTTP/2
	src    source   // ReadFrom's
}

// newRecorder is the recorder of w, answering a request of protoMajor.
func newRecorder(w http.ResponseWriter, protoMajor int) *recorder {
	return &recorder{ResponseWriter: w, h2: protoMajor == 2}
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
	if r.err != nil {
		return 0, r.err
	}
	if !r.h2 {
		n, err := r.ResponseWriter.Write(p)
		r.sent(int64(n), err)
		return n, err
	}
	n, sent, err := r.frames.write(r.ResponseWriter, p)
	r.sent(sent, err)
	return n, err
}

// ReadFrom copies src to the node: on HTTP/1.1 with the writer's own
// ReadFrom (into the connection's buffer), else through Write.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := r.ResponseWriter.(io.ReaderFrom)
	if r.h2 || !ok {
		return copyThrough(r, src)
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.err != nil {
		return 0, r.err
	}
	s := &r.src // a field: no allocation per copy
	*s = source{r: src, left: math.MaxInt64}
	n, err := rf.ReadFrom(s)
	s.r = nil
	if s.err != nil {
		r.bytes += n
		return n, err
	}
	r.sent(n, err)
	return n, err
}

func (r *recorder) sent(n int64, err error) {
	r.bytes += n
	if err != nil && r.err == nil {
		r.err = err
	}
}

// FlushError sends what is gathered, then flushes the node's
// connection (http.ResponseController calls it). A flush that fails is
// the node gone, as a failed write is.
func (r *recorder) FlushError() error {
	if err := r.flushFrames(); err != nil {
		return err
	}
	err := http.NewResponseController(r.ResponseWriter).Flush()
	if !errors.Is(err, http.ErrNotSupported) {
		r.sent(0, err)
	}
	return err
}

func (r *recorder) flushFrames() error {
	if !r.h2 || r.err != nil {
		return r.err
	}
	n, err := r.frames.flush(r.ResponseWriter)
	r.sent(n, err)
	return err
}

// end sends what is gathered of a response that completed (aborted:
// dropped, the stream is reset) and releases the buffer.
func (r *recorder) end(aborted bool) {
	if !r.h2 {
		return
	}
	if !aborted {
		_ = r.flushFrames()
	}
	r.frames.release()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
