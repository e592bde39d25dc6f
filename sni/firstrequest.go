package sni

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// DefaultFirstRequestTimeout is the default of Config.FirstRequestTimeout.
const DefaultFirstRequestTimeout = 10 * time.Second

// errNoFirstRequest ends a bridge connection whose client completed its
// TLS handshake and then sent nothing for FirstRequestTimeout.
var errNoFirstRequest = errors.New("no request after the TLS handshake")

// requestWait is the wait of a bridge connection, once its client's TLS
// handshake is done, for the first byte of its first request. Until that
// byte the connection stays in the handshake budget (MaxHandshakes), as
// it was from accept on, so silent connections compete with each other
// for it, the oldest of the client with the most closed first; and when
// FirstRequestTimeout passes first, the connection is closed with result
// "timeout". Its zero value waits for nothing; arm starts it.
type requestWait struct {
	s     *Server
	ss    *session
	d     time.Duration
	timer *time.Timer
	done  atomic.Bool
}

// arm starts the wait of ss: the timer of FirstRequestTimeout (none when
// it is negative).
func (w *requestWait) arm(s *Server, ss *session) {
	w.s, w.ss, w.d = s, ss, ss.cfg.FirstRequestTimeout
	if w.d > 0 {
		w.timer = time.AfterFunc(w.d, w.expire)
	}
}

// seen ends the wait: the first byte of a request arrived (or the
// connection ends). The connection leaves the handshake budget. It is
// cheap after the first call, and safe from any goroutine once arm
// returned.
func (w *requestWait) seen() {
	if w.ss == nil || w.done.Swap(true) {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.s.handshakeDone(w.ss)
}

// expire closes a connection that sent no request in time.
func (w *requestWait) expire() {
	if w.done.Swap(true) {
		return
	}
	err := fmt.Errorf("%w within timeouts.first_request (%v)", errNoFirstRequest, w.d)
	w.ss.cut(resultTimeout, err, false)
	w.s.handshakeDone(w.ss)
	w.s.warnf(resultTimeout+"/first-request/"+w.ss.routeName(), "bridge connection closed: the client completed its TLS handshake "+
		"and sent no request within timeouts.first_request; a stalled client, or connections opened and held (raise timeouts.first_request if clients are this slow)",
		"route", w.ss.routeName(), "client", w.ss.clientString(), "sni", w.ss.hello.ServerName, "err", err)
}
