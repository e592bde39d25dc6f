package dnsresponder

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxTCPConns bounds the TCP connections a Server serves at once
// per ServeTCP socket. DNS over TCP is the rare retry of a truncated
// answer (unbound allows 10 per thread, dnsmasq 20 children): 256 leaves
// room for every node of a large cluster retrying at once, while a client
// that opens connections without end cannot take the gateway's file
// descriptors, which its TLS listeners need.
const DefaultMaxTCPConns = 256

// DefaultMaxTCPConnsPerClient bounds the TCP connections one client
// address holds at once per ServeTCP socket: a resolver retrying a few
// truncated answers needs a handful, and 16 keeps one client from holding
// more than a sixteenth of DefaultMaxTCPConns.
const DefaultMaxTCPConnsPerClient = 16

// CrowdedTCPIdleTimeout is the idle timeout of every TCP connection, the
// wait for a first query included, while more than three quarters of
// MaxTCPConns are open (instead of 2s for the first query and 8s between
// queries), so that idle connections make room quickly.
const CrowdedTCPIdleTimeout = time.Second

// Reasons logged for refused and evicted connections.
var (
	errTooManyTCPConns          = errors.New("too many DNS TCP connections open, none of them idle")
	errTooManyTCPConnsPerClient = errors.New("too many DNS TCP connections open from this client")
	errTCPEvicted               = errors.New("closed the connection idle longest to admit a new one")
)

// tcpRefusedCounter is the optional capability of a handler that counts
// TCP connections refused over a limit (Handler has it).
type tcpRefusedCounter interface{ TCPRefused() }

// tcpEvictedCounter is the optional capability of a handler that counts
// idle TCP connections closed to admit a new one (Handler has it).
type tcpEvictedCounter interface{ TCPEvicted() }

// limitListener admits at most max connections at once (max <= 0: no
// limit), and at most perClient from one client address (perClient <= 0:
// no limit). When max are open, the connection idle longest (waiting for
// its client's next query, or for the rest of one) is closed to admit the
// new one; a connection beyond perClient, or beyond max when none is idle,
// is closed at once. Refusals and evictions are counted and logged
// (rate-limited), and Accept goes on with the next connection. While more
// than three quarters of max are open, every read waits at most
// CrowdedTCPIdleTimeout.
type limitListener struct {
	net.Listener
	s         *Server
	max       int
	perClient int

	mu      sync.Mutex
	conns   map[*limitConn]struct{}
	clients map[netip.Addr]int // open connections per client address
}

func newLimitListener(ln net.Listener, s *Server, max, perClient int) *limitListener {
	return &limitListener{
		Listener:  ln,
		s:         s,
		max:       max,
		perClient: perClient,
		conns:     make(map[*limitConn]struct{}),
		clients:   make(map[netip.Addr]int),
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, victim, refusal := l.admit(c)
		if victim != nil {
			l.evict(victim, c)
		}
		if refusal == nil {
			return lc, nil
		}
		l.refuse(c, refusal)
	}
}

// admit adds c to the set, making room by taking out the connection idle
// longest (returned, for the caller to close) when max are open; an error
// says why c is refused instead.
func (l *limitListener) admit(c net.Conn) (admitted, victim *limitConn, refusal error) {
	ip := addrIP(c.RemoteAddr()).Unmap().WithZone("")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perClient > 0 && l.clients[ip] >= l.perClient {
		return nil, nil, errTooManyTCPConnsPerClient
	}
	if l.max > 0 && len(l.conns) >= l.max {
		if victim = l.idlest(); victim == nil {
			return nil, nil, errTooManyTCPConns
		}
		l.remove(victim)
	}
	lc := &limitConn{Conn: c, l: l, ip: ip, last: time.Now()}
	l.conns[lc] = struct{}{}
	l.clients[ip]++
	if l.crowded() {
		l.shortenDeadlines(time.Now().Add(CrowdedTCPIdleTimeout))
	}
	return lc, victim, nil
}

// idlest is the connection waiting in a read that has been quiet longest
// (since it was accepted or last wrote a reply); nil when every one is
// busy answering. l.mu is held.
func (l *limitListener) idlest() *limitConn {
	var v *limitConn
	for c := range l.conns {
		if c.reading && (v == nil || c.last.Before(v.last)) {
			v = c
		}
	}
	return v
}

// crowded reports whether more than three quarters of max are open.
// l.mu is held.
func (l *limitListener) crowded() bool {
	return l.max > 0 && len(l.conns) > l.max*3/4
}

// shortenDeadlines brings every read deadline later than limit forward
// to it. l.mu is held; setting a deadline does not block.
func (l *limitListener) shortenDeadlines(limit time.Time) {
	for c := range l.conns {
		if c.deadline.IsZero() || c.deadline.After(limit) {
			c.deadline = limit
			c.Conn.SetReadDeadline(limit) //nolint:errcheck // a closed connection has no reads to bound
		}
	}
}

// remove takes c out of the set, once. l.mu is held.
func (l *limitListener) remove(c *limitConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.clients[c.ip]--; l.clients[c.ip] <= 0 {
		delete(l.clients, c.ip)
	}
	if l.s.tcpClosedFunc != nil {
		l.s.tcpClosedFunc()
	}
}

// evict closes victim, taken out of the set to admit c; its reader sees
// the close and its miekg/dns goroutine ends.
func (l *limitListener) evict(victim *limitConn, c net.Conn) {
	victim.Conn.Close()
	if h, ok := l.s.handler.Load().h.(tcpEvictedCounter); ok {
		h.TCPEvicted()
	}
	l.s.warn.logMsg(fmt.Sprintf("dns: TCP connections full (%d open on %s): closed the one idle longest (client) to admit one from %s; look for clients that open connections and send nothing", l.max, l.Addr(), c.RemoteAddr()),
		"tcp_evicted", victim.RemoteAddr().String(), errTCPEvicted)
}

// refuse closes c, counted and logged before the close, so that a client
// that sees the close sees them too.
func (l *limitListener) refuse(c net.Conn, why error) {
	if h, ok := l.s.handler.Load().h.(tcpRefusedCounter); ok {
		h.TCPRefused()
	}
	msg := fmt.Sprintf("dns: TCP connection refused: %d open on %s already (the limit), none idle; DNS over TCP is only the retry of a truncated answer, so look for a client that opens connections without end", l.max, l.Addr())
	key := "tcp_refused"
	if errors.Is(why, errTooManyTCPConnsPerClient) {
		msg = fmt.Sprintf("dns: TCP connection refused: %d open from this client on %s already (the limit per client); DNS over TCP is only the retry of a truncated answer, so look at what this client does", l.perClient, l.Addr())
		key = "tcp_refused per_client"
	}
	l.s.warn.logMsg(msg, key, c.RemoteAddr().String(), why)
	c.Close()
}

// limitConn is an admitted connection. It leaves the set when closed, and
// tells the set when it waits in a read (idle, may be evicted) and when
// it last wrote a reply; its read deadlines are bounded while the set is
// crowded.
type limitConn struct {
	net.Conn
	l  *limitListener
	ip netip.Addr

	// Guarded by l.mu.
	reading  bool
	last     time.Time // accepted, or last wrote
	deadline time.Time // the read deadline in force; zero: none
}

func (c *limitConn) Read(b []byte) (int, error) {
	c.setReading(true)
	n, err := c.Conn.Read(b)
	c.setReading(false)
	return n, err
}

func (c *limitConn) setReading(on bool) {
	c.l.mu.Lock()
	c.reading = on
	c.l.mu.Unlock()
}

func (c *limitConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.l.mu.Lock()
	c.last = time.Now()
	c.l.mu.Unlock()
	return n, err
}

// SetReadDeadline sets t, or CrowdedTCPIdleTimeout from now when that is
// sooner and the set is crowded.
func (c *limitConn) SetReadDeadline(t time.Time) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.l.crowded() {
		if limit := time.Now().Add(CrowdedTCPIdleTimeout); t.IsZero() || t.After(limit) {
			t = limit
		}
	}
	c.deadline = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the write deadline to t, and the read deadline as
// SetReadDeadline does.
func (c *limitConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.remove(c)
	c.l.mu.Unlock()
	return err
}
