package httpbridge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"os"
	"time"

	"github.com/snigate/snigate/upstream"
)

// errResponseHeaderTimeout is the cause of an attempt whose upstream sent
// no complete status line and headers within ResponseHeaderTimeout.
var errResponseHeaderTimeout = errors.New("timeouts.response_header exceeded")

// roundTrip sends req, a GET or HEAD without a body whose URL's host is
// the upstream's address, over a pooled connection of p in the calling
// goroutine: (*http.Request).Write, then http.ReadResponse, which frames
// the body. A reused connection that fails before any byte of its answer
// came (the registry closed it while it idled, or as the request came) is
// replaced by a new dial once; the node never sees it. A new
// connection's failure is the attempt's.
func (p *upPool) roundTrip(req *http.Request, h *upstream.Host, timeout time.Duration) (*http.Response, error) {
	addr := req.URL.Host
	pc, err := p.connect(req.Context(), addr, h)
	if err != nil {
		return nil, err
	}
	resp, err := p.exchange(pc, req, timeout)
	if err == nil || !pc.retryable(req, err) {
		return resp, err
	}
	if pc, err = p.redial(req.Context(), addr, h); err != nil {
		return nil, err
	}
	return p.exchange(pc, req, timeout)
}

// getLive is the most recently idled connection to addr that has
// nothing to read (upProbe), closing those that have; nil when none.
func (p *upPool) getLive(addr string) *upConn {
	for {
		pc := p.get(addr)
		if pc == nil || pc.probe.idle() {
			return pc
		}
		pc.close()
	}
}

// retryable: pc was reused, nothing of an answer came, and neither the
// request's context nor the header timeout ended the attempt.
func (pc *upConn) retryable(req *http.Request, err error) bool {
	return pc.reused && pc.reads == 0 && req.Context().Err() == nil && !errors.Is(err, errResponseHeaderTimeout)
}

// exchange sends req on pc and reads the answer's head. On success the
// answer's body owns pc (upBody); on failure pc is closed.
func (p *upPool) exchange(pc *upConn, req *http.Request, timeout time.Duration) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, pc.abort)
	pc.begin()
	resp, err := pc.send(req, timeout)
	if err != nil {
		stop()
		pc.close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", err, context.Cause(ctx))
		}
		return nil, err
	}
	pc.headersDone()
	resp.TLS = pc.tls
	body := &upBody{pc: pc, body: resp.Body, stop: stop, ctx: ctx,
		keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		body.finish(true)
		return resp, nil
	}
	resp.Body = body
	return resp, nil
}

// send writes req and reads the final answer's head within timeout.
func (pc *upConn) send(req *http.Request, timeout time.Duration) (*http.Response, error) {
	if err := pc.write(req); err != nil {
		return nil, fmt.Errorf("write request to %s: %w", pc.addr, err)
	}
	if timeout > 0 {
		_ = pc.conn.SetReadDeadline(time.Now().Add(timeout))
	}
	resp, err := pc.readHead(req)
	if timeout > 0 {
		_ = pc.conn.SetReadDeadline(time.Time{})
	}
	if isTimeout(err) {
		return nil, fmt.Errorf("read answer from %s: %w (%v): %w", pc.addr, errResponseHeaderTimeout, timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read answer from %s: %w", pc.addr, err)
	}
	return resp, nil
}

// write writes req through a pooled buffer, one write for a request
// that fits it.
func (pc *upConn) write(req *http.Request) error {
	bw := upWriters.Get().(*bufio.Writer)
	bw.Reset(pc.conn)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	upWriters.Put(bw)
	return err
}

// readHead reads answers until the final one: 1xx ones (100, 103) are
// skipped, given to the request's httptrace.ClientTrace.Got1xxResponse
// as net/http's Transport does (ReverseProxy passes them to the node);
// 101 is refused: the bridge upgrades nothing.
func (pc *upConn) readHead(req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	for n := 0; ; n++ {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		switch {
		case code == http.StatusSwitchingProtocols:
			return nil, errors.New("upstream answered 101 Switching Protocols to a request that asked no upgrade")
		case code >= 200 || code < 100:
			return resp, nil
		case n+1 >= max1xxAnswers:
			return nil, fmt.Errorf("more than %d informational answers", max1xxAnswers)
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// isTimeout: err is a read deadline's (errors.Is: no allocation, as
// errors.As would cost on every answer).
func isTimeout(err error) bool {
	return err != nil && errors.Is(err, os.ErrDeadlineExceeded)
}
