package httpcache

import (
	"net/http"
)

// HeldTail is how many final bytes of a response served from a fill in
// flight are held back until the fill's digest matched: a fill that fails
// its check always leaves the node's response short (and aborted), never
// complete with bytes that do not match their digest. It is the size of
// http.ServeContent's copy buffer, so the last write is held whole.
const HeldTail = 32 << 10

// tailWriter passes a 2xx response's body to w except its last HeldTail
// bytes, which it keeps until release (the digest matched) and drops
// when the response is aborted. Every write that passes is flushed, so
// the node keeps up with the fill. Other statuses pass untouched.
type tailWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	tail    []byte
	passing bool // a status other than 2xx: nothing held
	wrote   bool // the status is written
}

func newTailWriter(w http.ResponseWriter) *tailWriter {
	return &tailWriter{ResponseWriter: w, rc: http.NewResponseController(w), tail: make([]byte, 0, HeldTail)}
}

// WriteHeader writes the status and sends the header at once: the node
// knows it is answered while the fill goes on.
func (t *tailWriter) WriteHeader(code int) {
	if !t.wrote && code >= 200 {
		t.wrote, t.passing = true, code/100 != 2
	}
	t.ResponseWriter.WriteHeader(code)
	if code >= 200 {
		_ = t.rc.Flush()
	}
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if !t.wrote {
		t.WriteHeader(http.StatusOK)
	}
	if t.passing {
		return t.ResponseWriter.Write(p)
	}
	if len(t.tail)+len(p) <= HeldTail {
		t.tail = append(t.tail, p...)
		return len(p), nil
	}
	out := len(t.tail) + len(p) - HeldTail // bytes that leave the tail now
	fromTail := min(out, len(t.tail))
	if err := t.pass(t.tail[:fromTail]); err != nil {
		return 0, err
	}
	t.tail = append(t.tail[:0], t.tail[fromTail:]...)
	if err := t.pass(p[:out-fromTail]); err != nil {
		return 0, err
	}
	t.tail = append(t.tail, p[out-fromTail:]...)
	_ = t.rc.Flush()
	return len(p), nil
}

func (t *tailWriter) pass(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	_, err := t.ResponseWriter.Write(p)
	return err
}

// release writes the held bytes: the fill's digest matched.
func (t *tailWriter) release() error {
	err := t.pass(t.tail)
	t.tail = t.tail[:0]
	return err
}

// Unwrap lets http.ResponseController reach the bridge's writer.
func (t *tailWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
