package httpbridge

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// MaxUnreadRequestBody is the most of an HTTP/1.x request body the
// handler left unread that is read and dropped to keep the connection
// (net/http's maxPostHandlerReadBytes); a longer rest, or one known to
// be as long, closes the connection after the answer.
const MaxUnreadRequestBody = 256 << 10

// h1Body is an HTTP/1.x request's body as the handler reads it: the
// body of http.ReadRequest, read under a lock that the connection takes
// at the request's end, so that no read reaches the connection's reader
// after it (a transport still sending the body upstream). Close does not
// read the rest: the connection decides that (settleBody).
type h1Body struct {
	r      io.ReadCloser
	length int64       // the request's ContentLength, -1 when unknown
	cont   *h1Continue // Expect: 100-continue; nil without
	eof    atomic.Bool
	closed atomic.Bool

	mu   sync.Mutex
	n    int64 // bytes read
	done bool  // the request is over
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.cont != nil {
		b.cont.send()
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *h1Body) Close() error {
	b.closed.Store(true)
	return nil
}

// discard reads and drops the rest up to MaxUnreadRequestBody; tooBig when
// more is left (or known to be), err when the read failed.
func (b *h1Body) discard() (tooBig bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done || b.length >= 0 && b.length-b.n >= MaxUnreadRequestBody {
		return true, nil
	}
	n, err := io.CopyN(io.Discard, b.r, MaxUnreadRequestBody+1)
	b.n += n
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		return false, nil
	case err == nil:
		return true, nil
	}
	return false, err
}

// end makes later reads fail; it waits for a read under way.
func (b *h1Body) end() {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

// continueLine is the interim response to Expect: 100-continue.
var continueLine = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// h1Continue sends a request's 100 Continue at the handler's first read
// of its body, unless the response began first. Its lock also orders an
// informational response with it (the body may be read on another
// goroutine than the handler's).
type h1Continue struct {
	c    *h1Conn
	mu   sync.Mutex
	can  bool
	sent bool
}

func (k *h1Continue) reset(can bool) {
	k.mu.Lock()
	k.can, k.sent = can, false
	k.mu.Unlock()
}

func (k *h1Continue) send() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.can {
		k.can, k.sent = false, true
		_, _ = k.c.conn.Write(continueLine)
	}
}

func (k *h1Continue) disable() {
	k.mu.Lock()
	k.can = false
	k.mu.Unlock()
}

func (k *h1Continue) locked(fn func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	fn()
}

// prepareBody puts the request's body under an h1Body.
func (c *h1Conn) prepareBody(req *http.Request) {
	c.body = nil
	c.cont.reset(false)
	if req.Body == nil || req.Body == http.NoBody {
		return
	}
	b := &h1Body{r: req.Body, length: req.ContentLength}
	if expectsContinue(req) && req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
		b.cont = &c.cont
		c.cont.reset(true)
	}
	req.Body, c.body = b, b
}

// checkExpect answers 417 to an Expect other than 100-continue, as
// net/http does; false when it did.
func (c *h1Conn) checkExpect(req *http.Request, w *h1Writer) bool {
	if req.Header.Get("Expect") == "" || expectsContinue(req) {
		return true
	}
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusExpectationFailed)
	w.finish()
	return false
}

func expectsContinue(req *http.Request) bool {
	for _, v := range req.Header["Expect"] {
		for _, e := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(e), "100-continue") {
				return true
			}
		}
	}
	return false
}

// settleBody decides, as the response's header goes out, what becomes
// of the body the handler left unread (net/http does it then, for the
// nodes that send a whole request before they read): dropped when short,
// else the connection closes after the response.
func (c *h1Conn) settleBody(w *h1Writer) {
	b := c.body
	if b == nil || w.closeAfter || b.eof.Load() {
		return
	}
	if b.cont != nil || b.closed.Load() { // the node waits for a 100 Continue, or the rest was refused
		w.closeAfter = true
		return
	}
	tooBig, err := b.discard()
	if tooBig || err != nil {
		w.closeAfter = true
		c.linger = tooBig
	}
}

// endBody ends the request's body: no read after this.
func (c *h1Conn) endBody() {
	if c.body != nil {
		c.body.end()
		c.body = nil
	}
}
