package sni

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/inetaf/tcpproxy"
)

// spliceTarget forwards a connection's raw bytes to an upstream: TLS stays
// end to end. It is created per connection.
type spliceTarget struct {
	s  *Server
	ss *session
}

var _ tcpproxy.Target = (*spliceTarget)(nil)

// HandleConn implements tcpproxy.Target: c is the client connection with
// its ClientHello in c.(*tcpproxy.Conn).Peeked. It closes c.
func (t *spliceTarget) HandleConn(c net.Conn) {
	defer c.Close()
	t.ss.conn.SetDeadline(time.Time{})
	up, release, err := t.s.connect(t.s.ctx, t.ss, t.dial(c))
	if err != nil {
		t.s.connectFailed(t.ss, err)
		return
	}
	defer release()
	defer up.Close()
	if !t.ss.setPeer(up) {
		return
	}
	t.ss.releaseHello()
	t.ss.inTunnel.Store(true)
	t.ss.end(t.s.pipe(t.ss, tcpproxy.UnderlyingConn(c), up))
}

// dial returns the dialFunc of this connection: TCP, then the PROXY header
// and the ClientHello bytes in one write, so that a failed write is
// retried on the next candidate too.
func (t *spliceTarget) dial(c net.Conn) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		up, err := t.s.dialTCP(ctx, addr)
		if err != nil {
			return nil, err
		}
		if err := t.replay(ctx, up, c); err != nil {
			up.Close()
			return nil, err
		}
		return up, nil
	}
}

func (t *spliceTarget) replay(ctx context.Context, up, c net.Conn) error {
	pc, _ := c.(*tcpproxy.Conn)
	bufs := make(net.Buffers, 0, 2)
	if v := t.ss.route.ProxyProtocol; v != ProxyProtocolNone {
		hdr, err := formatProxyHeader(v, t.ss.client, t.ss.dest)
		if err != nil {
			return fmt.Errorf("format PROXY %s header: %w", v, err)
		}
		bufs = append(bufs, hdr)
	}
	if pc != nil && len(pc.Peeked) > 0 {
		bufs = append(bufs, pc.Peeked)
	}
	if d, ok := ctx.Deadline(); ok {
		up.SetWriteDeadline(d)
		defer up.SetWriteDeadline(time.Time{})
	}
	if _, err := bufs.WriteTo(up); err != nil {
		return fmt.Errorf("send ClientHello: %w", err)
	}
	if pc != nil {
		n := int64(len(pc.Peeked))
		t.ss.up.Add(n)
		t.ss.rm.addBytes(DirectionUpstream, n)
		pc.Peeked = nil
	}
	return nil
}

// pipe copies between client and upstream until both directions end,
// either fails or the tunnel is idle, using splice(2) only while bytes are
// queued when both are TCP connections.
func (s *Server) pipe(ss *session, client, up net.Conn) (string, error) {
	t := newTunnel(ss, client, up, ss.cfg.IdleTimeout)
	t.pipes = s.pipes
	cu, ok1 := client.(*net.TCPConn)
	uu, ok2 := up.(*net.TCPConn)
	if ok1 && ok2 {
		if upDir, downDir, err := t.spliceDirections(cu, uu); err == nil {
			return t.run(upDir, downDir)
		}
	}
	return t.run(t.copier(client, up, sideClient, sideUpstream, DirectionUpstream).run,
		t.copier(up, client, sideUpstream, sideClient, DirectionDownstream).run)
}
