package httpcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// serveEntry answers r from e: the whole content or the ranges asked
// (http.ServeContent; more than MaxRanges, or ranges out of order, get
// the whole content), with Content-Type (the registry's HEAD answer's
// when it has one, else the stored one) and Docker-Content-Digest. A
// read that fails (a fill that broke, a disk error) aborts the response:
// the node never sees a short success. Served from a fill in flight, the
// response's last HeldTail bytes wait for the fill's digest check, and a
// failed check aborts it: the node never gets a complete response of
// bytes that do not match their digest.
func (c *Cache) serveEntry(w http.ResponseWriter, r *http.Request, req request, e Entry, head http.Header) {
	defer e.Close()
	h := w.Header()
	h.Set("Content-Type", contentType(head, e.Header()))
	h.Set("Docker-Content-Digest", e.Digest())
	h.Set("Etag", `"`+e.Digest()+`"`)
	rd := &checkedReader{e: e, ctx: r.Context()}
	var held *tailWriter
	if !e.Stored() {
		held = newTailWriter(w)
		w = held
	}
	if e.Size() < 0 {
		c.stream(w, r, rd) // a fill of unknown length: no ranges until it is stored
	} else {
		http.ServeContent(w, withoutRanges(r, e.Size()), "", time.Time{}, rd)
	}
	if held != nil && rd.err == nil && r.Context().Err() == nil {
		rd.note(e.Verified())
		if rd.err == nil {
			_ = held.release() // a node gone meanwhile is net/http's to see
		}
	}
	if rd.err != nil {
		req.ann.Fail(fmt.Errorf("cache: %s: %w", e.Digest(), rd.err), true)
		panic(http.ErrAbortHandler)
	}
}

// stream copies content of unknown length to the node.
func (c *Cache) stream(w http.ResponseWriter, r *http.Request, rd io.Reader) {
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(w, rd)
}

// contentType is the registry's Content-Type, else the stored one, else
// octet-stream.
func contentType(head, stored http.Header) string {
	for _, h := range []http.Header{head, stored} {
		if v := h.Get("Content-Type"); v != "" {
			return v
		}
	}
	return "application/octet-stream"
}

// checkedReader keeps the first error of the Entry's reads other than
// io.EOF and the node going away.
type checkedReader struct {
	e   Entry
	ctx context.Context
	err error
}

func (r *checkedReader) Read(p []byte) (int, error) {
	n, err := r.e.Read(p)
	r.note(err)
	return n, err
}

func (r *checkedReader) Seek(off int64, whence int) (int64, error) {
	return r.e.Seek(off, whence)
}

func (r *checkedReader) note(err error) {
	if err == nil || errors.Is(err, io.EOF) || r.ctx.Err() != nil || r.err != nil {
		return
	}
	r.err = err
}
