package dnsresponder

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// DefaultMaxTCPConns bounds the TCP connections a Server serves at once
// per ServeTCP socket. DNS over TCP is the rare retry of a truncated
// answer (unbound allows 10 per thread, dnsmasq 20 children): 256 leaves
// room for every node of a large cluster retrying at once, while a client
// that opens connections without end cannot take the gateway's file
// descriptors, which its TLS listeners need.
const DefaultMaxTCPConns = 256

// errTooManyTCPConns is the reason logged for a refused connection.
var errTooManyTCPConns = errors.New("too many DNS TCP connections open")

// tcpRefusedCounter is the optional capability of a handler that counts
// TCP connections refused over the limit (Handler has it).
type tcpRefusedCounter interface{ TCPRefused() }

// limitListener hands out at most cap(slots) connections at once; one more
// is closed at once, counted and logged (rate-limited), and Accept goes
// on with the next.
type limitListener struct {
	net.Listener
	s     *Server
	slots chan struct{}
	max   int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, slots: l.slots}, nil
		default:
		}
		// Counted and logged before the close, so that a client that sees
		// the close sees them too.
		if h, ok := l.s.handler.Load().h.(tcpRefusedCounter); ok {
			h.TCPRefused()
		}
		l.s.warn.logMsg(fmt.Sprintf("dns: TCP connection refused: %d open on %s already (the limit); DNS over TCP is only the retry of a truncated answer, so look for a client that opens connections without end", l.max, l.Addr()),
			"tcp_refused", c.RemoteAddr().String(), errTooManyTCPConns)
		c.Close()
	}
}

// limitConn frees its slot when closed (once).
type limitConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}
