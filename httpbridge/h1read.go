package httpbridge

import (
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1HeaderLimit is how much of a request's line and header the reader
// takes before answering 431: net/http's MaxHeaderBytes plus its 4096
// bytes of slack.
const h1HeaderLimit = DefaultMaxHeaderBytes + 4096

// h1LingerTime bounds how long a connection closed on a node still
// sending waits for the node's close after the answer (net/http's
// rstAvoidanceDelay), and h1LingerBytes how much it reads meanwhile.
const (
	h1LingerTime  = 500 * time.Millisecond
	h1LingerBytes = 4 << 20
)

// h1Limit is the connection's reader under the header limit; it notes
// whether the limit or the connection ended a read.
type h1Limit struct {
	r   io.Reader
	n   int64
	hit bool  // the limit ended a read
	err error // the connection's read error
}

func (l *h1Limit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.hit = true
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err != nil {
		l.err = err
	}
	return n, err
}

// h1Refusal is a request refused before the handler, answered as
// net/http answers it.
type h1Refusal struct {
	status int
	text   string // after the status text; "" for none
	body   string // "" for the status line's text
}

// readRequest reads the next request with http.ReadRequest under the
// header limit (await set it). A request net/http's server refuses is answered so here
// and false returned; a failed read of the connection is not answered.
func (c *h1Conn) readRequest() (*http.Request, bool) {
	req, err := http.ReadRequest(c.br)
	if err == nil {
		c.lr.n = math.MaxInt64
		_ = c.conn.SetReadDeadline(time.Time{})
		ref := checkRequest(req)
		if ref == nil {
			return req, true
		}
		c.refuse(ref, errors.New(ref.text))
		return nil, false
	}
	switch {
	case c.lr.hit:
		c.linger = true
		c.refuse(&h1Refusal{status: http.StatusRequestHeaderFieldsTooLarge}, err)
	case c.lr.err != nil: // the node closed, or the read header timeout
	case strings.HasPrefix(err.Error(), "unsupported transfer encoding"): // net/http's unexported unsupportedTEError
		c.refuse(&h1Refusal{status: http.StatusNotImplemented, body: "Unsupported transfer encoding"}, err)
	default:
		c.refuse(&h1Refusal{status: http.StatusBadRequest}, err)
	}
	return nil, false
}

// checkRequest is what net/http's server checks beyond ReadRequest: the
// version and the Host.
func checkRequest(req *http.Request) *h1Refusal {
	switch {
	case req.ProtoMajor != 1:
		return &h1Refusal{status: http.StatusHTTPVersionNotSupported, text: "unsupported protocol version"}
	case req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect:
		return &h1Refusal{status: http.StatusBadRequest, text: "missing required Host header"}
	case !httpguts.ValidHostHeader(req.Host):
		return &h1Refusal{status: http.StatusBadRequest, text: "malformed Host header"}
	}
	return nil
}

// refuse answers a request refused before the handler, with net/http's
// status line, headers and text body, and logs it at Debug.
func (c *h1Conn) refuse(ref *h1Refusal, err error) {
	c.log.Debug("malformed http request from the node", "route", c.route, "client", c.remote,
		"status", ref.status, "err", err)
	line := strconv.Itoa(ref.status) + " " + http.StatusText(ref.status)
	if ref.text != "" {
		line += ": " + ref.text
	}
	body := ref.body
	if body == "" {
		body = line
	}
	bw := c.writer()
	_, _ = bw.WriteString("HTTP/1.1 " + line + "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" + body)
	_ = bw.Flush()
	c.releaseWriter()
}

// lingerClose half-closes conn and reads what the node still sends until
// it closes, for at most h1LingerTime and h1LingerBytes, so that the
// node reads the answer before the close resets the connection.
func lingerClose(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = conn.SetReadDeadline(time.Now().Add(h1LingerTime))
	_, _ = io.CopyN(io.Discard, conn, h1LingerBytes)
}
