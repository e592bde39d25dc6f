package admin

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Admin connection limits. The cap (Config.MaxConns, DefaultMaxConns)
// counts connections, busy or not: a connection that has sent nothing yet,
// or sits idle between requests, holds a place like one in a request. So
// that a client cannot starve the others (Prometheus, snigate ctl, the
// kubelet's probes) by opening connections and sending nothing:
//
//   - one client address holds at most Config.MaxConnsPerClient of them;
//     past it, its own oldest waiting connection is closed to make room,
//     and when all of its connections are in a request the new one is
//     refused with a 503;
//   - when the cap is reached, the oldest waiting connection of the
//     address that holds the most is closed to make room, so that a flood
//     competes with itself;
//   - when every connection is in a request, up to DefaultReservedConns
//     more are accepted for /healthz and /readyz only: each must send its
//     request header within DefaultReservedHeaderTimeout, is answered and
//     closed; any other path gets a 503 there. Past those, a 503 at once.
//
// A waiting connection is one in http.StateNew (accepted, request header
// not complete) or http.StateIdle (keep-alive between requests). (One
// whose request header completes just as it is chosen loses that
// request: http.Server reports StateActive only once the header is read.)
const (
	// DefaultMaxConns is how many admin connections are open at once.
	// Scrapes and ctl calls need a handful.
	DefaultMaxConns = 64
	// DefaultMaxConnsPerClient is how many of the admin connections one
	// client address may hold (unix socket clients are not told apart).
	DefaultMaxConnsPerClient = 16
	// DefaultReservedConns is how many connections past the cap may ask
	// for /healthz or /readyz when no waiting connection can be closed.
	DefaultReservedConns = 4
	// DefaultReservedHeaderTimeout bounds the request header read of a
	// connection beyond the cap.
	DefaultReservedHeaderTimeout = time.Second
	// refuseWriteTimeout bounds the 503 written to a refused connection
	// from the accept loop (a fresh socket's send buffer is empty).
	refuseWriteTimeout = 100 * time.Millisecond
	// limitWarnEvery rate-limits the Warn line of each shedding reason.
	limitWarnEvery = time.Minute
)

// Reasons a connection was shed: the reason label of
// snigate_admin_connections_shed_total.
const (
	shedWaiting = "waiting_closed" // a waiting connection closed to make room
	shedClient  = "client_refused" // refused: its address is at its share, all busy
	shedLimit   = "limit_refused"  // refused: the cap and the reserve are full
	shedReserve = "reserved"       // admitted past the cap, for health only
)

// connLimiter admits the admin connections (see the constants above). Its
// accept side runs in the listeners' Accept; http.Server.ConnState keeps
// its view of each connection's state.
type connLimiter struct {
	max, perClient, reserve int
	headerTimeout           time.Duration
	metrics                 *Metrics
	warn                    func(reason, msg string, args ...any)
	// changed, when set (tests), is called after every change.
	changed func()

	mu       sync.Mutex
	seq      uint64
	conns    map[net.Conn]*connEntry
	clients  map[string]int // counted connections per client address
	reserved int            // connections admitted past the cap
	accepted int            // connections accepted so far
}

// connEntry is one connection the limiter counts.
type connEntry struct {
	client   string // "" for a unix socket
	seq      uint64 // order of the last state change: lower waited longer
	busy     bool   // in a request (http.StateActive)
	reserved bool
}

func newConnLimiter(max, perClient int, m *Metrics, warn func(string, string, ...any)) *connLimiter {
	return &connLimiter{
		max: max, perClient: perClient, reserve: DefaultReservedConns,
		headerTimeout: DefaultReservedHeaderTimeout, metrics: m, warn: warn,
		conns: make(map[net.Conn]*connEntry), clients: make(map[string]int),
	}
}

// limitListener runs every accepted connection through the limiter.
type limitListener struct {
	net.Listener
	lim *connLimiter
}

// Accept returns the next connection the limiter admits; refused ones are
// answered and closed here.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c = l.lim.admit(c); c != nil {
			return c, nil
		}
	}
}

// admit counts c and returns it (wrapped when admitted past the cap), or
// refuses it and returns nil. A waiting connection closed to make room is
// closed outside the lock.
func (l *connLimiter) admit(c net.Conn) net.Conn {
	client := clientKey(c.RemoteAddr())
	l.mu.Lock()
	l.accepted++
	victim, out, reason := l.decideLocked(c, client)
	l.mu.Unlock()
	if victim != nil {
		victim.Close()
		l.shed(shedWaiting, "admin: connection limit reached, closed the oldest connection waiting without a request",
			"client", client)
	}
	switch reason {
	case shedClient:
		l.shed(reason, "admin: one client address holds its whole share of admin connections, all in requests: refused a new one",
			"client", client, "max_per_client", l.perClient)
		refuse(c, "this client address has too many admin connections open")
	case shedLimit:
		l.shed(reason, "admin: connection limit reached with every connection in a request: refused a new one",
			"client", client, "max", l.max)
		refuse(c, "the admin listener is at its connection limit")
	case shedReserve:
		l.shed(reason, "admin: connection limit reached with every connection in a request: serving only /healthz and /readyz to new ones",
			"client", client, "max", l.max)
	}
	l.notify()
	return out
}

// decideLocked chooses what becomes of c: admitted (out is c, or its
// reservedConn), perhaps with a victim to close first, or refused (out
// nil, reason says why).
func (l *connLimiter) decideLocked(c net.Conn, client string) (victim, out net.Conn, reason string) {
	if client != "" && l.perClient > 0 && l.clients[client] >= l.perClient {
		if victim = l.oldestWaitingLocked(func(e *connEntry) bool { return e.client == client }); victim == nil {
			return nil, nil, shedClient
		}
	} else if len(l.conns)-l.reserved >= l.max {
		if victim = l.oldestWaitingLocked(l.largestClientLocked()); victim == nil {
			out, reason = l.admitReservedLocked(c, client)
			return nil, out, reason
		}
	}
	l.forgetLocked(victim)
	l.seq++
	l.conns[c] = &connEntry{client: client, seq: l.seq}
	l.clients[client]++
	return victim, c, ""
}

// admitReservedLocked admits c past the cap for health only, or refuses it.
func (l *connLimiter) admitReservedLocked(c net.Conn, client string) (net.Conn, string) {
	if l.reserved >= l.reserve {
		return nil, shedLimit
	}
	rc := &reservedConn{Conn: c, deadline: time.Now().Add(l.headerTimeout)}
	rc.Conn.SetReadDeadline(rc.deadline) //nolint:errcheck // a failed deadline fails the read
	l.seq++
	l.conns[rc] = &connEntry{client: client, seq: l.seq, reserved: true}
	l.reserved++
	return rc, shedReserve
}

// largestClientLocked selects the waiting connections of the clients that
// hold the most connections.
func (l *connLimiter) largestClientLocked() func(*connEntry) bool {
	most := 0
	for _, e := range l.conns {
		if !e.busy && !e.reserved {
			most = max(most, l.clients[e.client])
		}
	}
	return func(e *connEntry) bool { return l.clients[e.client] == most }
}

// oldestWaitingLocked is the counted connection that has waited longest
// among those match selects; nil when all are busy.
func (l *connLimiter) oldestWaitingLocked(match func(*connEntry) bool) net.Conn {
	var victim net.Conn
	var seq uint64
	for c, e := range l.conns {
		if e.busy || e.reserved || !match(e) {
			continue
		}
		if victim == nil || e.seq < seq {
			victim, seq = c, e.seq
		}
	}
	return victim
}

// forgetLocked stops counting c (nil: nothing).
func (l *connLimiter) forgetLocked(c net.Conn) {
	e, ok := l.conns[c]
	if !ok {
		return
	}
	delete(l.conns, c)
	if e.reserved {
		l.reserved--
		return
	}
	if l.clients[e.client]--; l.clients[e.client] <= 0 {
		delete(l.clients, e.client)
	}
}

// connState is http.Server.ConnState: busy in a request, waiting when
// idle, forgotten when closed or hijacked.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	switch st {
	case http.StateActive, http.StateIdle:
		if e, ok := l.conns[c]; ok {
			l.seq++
			e.busy, e.seq = st == http.StateActive, l.seq
		}
	case http.StateClosed, http.StateHijacked:
		l.forgetLocked(c)
	}
	l.mu.Unlock()
	l.notify()
}

func (l *connLimiter) shed(reason, msg string, args ...any) {
	l.metrics.connShed(reason)
	l.warn(reason, msg, args...)
}

func (l *connLimiter) notify() {
	if l.changed != nil {
		l.changed()
	}
}

// clientKey is the client address a share is counted for: the IP of a TCP
// peer, "" for a unix socket.
func clientKey(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return ""
	}
	ip, _ := netip.AddrFromSlice(ta.IP)
	return ip.Unmap().String()
}

// refuse answers a refused connection with a 503 naming why, and closes it.
func refuse(c net.Conn, why string) {
	body := why + "; retry later\n"
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout)) //nolint:errcheck // a failed deadline fails the write
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Connection: close\r\nRetry-After: 1\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
	c.Close()
}

// reservedConn is a connection admitted past the cap: its read deadline
// never goes past the short one it was given, whatever http.Server sets.
type reservedConn struct {
	net.Conn
	deadline time.Time
}

func (c *reservedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

func (c *reservedConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(c.clamp(t))
}

// CloseWrite lets http.Server half-close before closing, as it does for a
// *net.TCPConn, so that the answer is not lost to a reset.
func (c *reservedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *reservedConn) clamp(t time.Time) time.Time {
	if t.IsZero() || t.After(c.deadline) {
		return c.deadline
	}
	return t
}

// reservedKey marks the context of a request on a reservedConn.
type reservedKey struct{}

// connContext is http.Server.ConnContext: it marks reserved connections.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*reservedConn); ok {
		return context.WithValue(ctx, reservedKey{}, true)
	}
	return ctx
}

// reservedOnly serves, on a connection admitted past the cap, only
// /healthz and /readyz, and closes it after the answer.
func reservedOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reservedKey{}) == nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			h.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusServiceUnavailable, "the admin listener is at its connection limit: only /healthz and /readyz are answered now; retry later")
	})
}
