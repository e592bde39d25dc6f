package sni

import (
	"errors"
	"fmt"
	"net"
)

// Results of the admission limits, beside resultLimit and resultDenied.
const (
	// resultClientLimit: the client had MaxConnectionsPerClient open.
	resultClientLimit = "client_limit"
	// resultHandshakeLimit: closed before its ClientHello was complete
	// to make room in a full MaxHandshakes budget.
	resultHandshakeLimit = "handshake_limit"
)

// errEvicted is the error of a connection closed to make room in a full
// handshake budget.
var errEvicted = errors.New("closed before its ClientHello was complete: max_handshakes reached, and its client had the most pending")

// refusalAdvice is the Warn message of each admission refusal.
var refusalAdvice = map[string]string{
	resultDenied: "connection refused: client address not in listen.allow; add its network to listen.allow if it should pass",
	resultLimit:  "connection refused: max_connections reached; raise max_connections (and the fd limit) or add gateways",
	resultClientLimit: "connection refused: the client has max_connections_per_client connections open; a client in a reconnect loop, " +
		"or many clients behind one NAT address (raise max_connections_per_client; 0 removes the limit)",
	resultHandshakeLimit: "pending connection closed: max_handshakes connections were waiting for their ClientHello (or CONNECT request), " +
		"so the oldest of the client with the most was closed; a slow or stalled client, or a slowloris (raise max_handshakes if legitimate clients are this slow)",
}

// accept admits c and starts its goroutine, or refuses it at once when
// the client is outside listen.allow, the server or the client is at its
// limit, or the server is closing. A connection from a trusted balancer is
// admitted by its goroutine once its PROXY header names the client.
func (s *Server) accept(c net.Conn, label, kind string) {
	ss := newSession(c, label, kind, s.cfg.Load())
	ss.viaProxy = len(ss.cfg.ProxyProtocolFrom) > 0 && inPrefixes(ss.cfg.ProxyProtocolFrom, ss.client)
	var res string
	var err error
	if !ss.viaProxy {
		res, err = s.checkAllow(ss)
	}
	if res == "" {
		res, err = s.track(ss)
	}
	if res != "" {
		s.refuse(ss, res, err)
		return
	}
	s.enterHandshake(ss)
	go s.serveConn(ss)
}

// refuse ends a connection that admission refused with res. A client
// over its own limit is held in the tarpit (finish), not closed: closing
// at once would answer a reconnect loop with as many accepts as it can
// dial.
func (s *Server) refuse(ss *session, res string, err error) {
	ss.tarpit = res == resultClientLimit
	ss.end(res, err)
	s.finish(ss)
	s.warnRefusal(ss, res)
}

// checkAllow applies listen.allow to the client address.
func (s *Server) checkAllow(ss *session) (string, error) {
	if len(ss.cfg.Allow) > 0 && !inPrefixes(ss.cfg.Allow, ss.client) {
		return resultDenied, fmt.Errorf("client %s not in listen.allow", ss.clientString())
	}
	return "", nil
}

// warnRefusal logs the rate-limited Warn of an admission refusal.
func (s *Server) warnRefusal(ss *session, res string) {
	msg, ok := refusalAdvice[res]
	if !ok {
		return // shutdown: nothing to change
	}
	args := []any{"listener", ss.listener, "client", ss.clientString()}
	switch res {
	case resultLimit:
		args = append(args, "max_connections", ss.cfg.MaxConnections)
	case resultClientLimit:
		args = append(args, "max_connections_per_client", ss.cfg.MaxConnectionsPerClient)
	case resultHandshakeLimit:
		args = append(args, "max_handshakes", ss.cfg.MaxHandshakes)
	}
	s.warnf(res, msg, args...)
}

// track adds ss to the connection set and counts it in the server's
// goroutines; unless it comes from a trusted balancer (whose client is not
// known yet), it also takes its max_connections slot. It returns the
// result that refuses it instead, if any.
func (s *Server) track(ss *session) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return resultShutdown, errors.New("server shutting down")
	}
	if !ss.viaProxy {
		if res, err := s.takeSlotLocked(ss); res != "" {
			return res, err
		}
	}
	s.sessions[ss] = struct{}{}
	s.wg.Add(1)
	return "", nil
}

// takeSlot counts ss in max_connections and max_connections_per_client
// once its client address is known.
func (s *Server) takeSlot(ss *session) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeSlotLocked(ss)
}

func (s *Server) takeSlotLocked(ss *session) (string, error) {
	ip, _ := addrOf(ss.client)
	if limit := ss.cfg.MaxConnectionsPerClient; limit > 0 && s.clients[ip] >= limit {
		return resultClientLimit, fmt.Errorf("client %s has %d connections open (max_connections_per_client)", ip, s.clients[ip])
	}
	if limit := ss.cfg.MaxConnections; limit > 0 && s.counted >= limit {
		return resultLimit, fmt.Errorf("%d connections open (max_connections)", s.counted)
	}
	ss.slot, ss.clientIP = true, ip
	s.counted++
	s.clients[ip]++
	return "", nil
}

func (s *Server) untrack(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, ss)
	s.releaseSlotLocked(ss)
}

// releaseSlot gives back ss's max_connections and per-client slot, once.
// An evicted connection gives its slot back at once, not when its
// goroutine ends: a burst of reconnects evicting each other must not fill
// max_connections meanwhile.
func (s *Server) releaseSlot(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseSlotLocked(ss)
}

func (s *Server) releaseSlotLocked(ss *session) {
	if !ss.slot {
		return
	}
	ss.slot = false
	s.counted--
	if s.clients[ss.clientIP]--; s.clients[ss.clientIP] <= 0 {
		delete(s.clients, ss.clientIP)
	}
}

// budgetOf returns the pending-handshake budget of ss's kind of listener.
func (s *Server) budgetOf(ss *session) *handshakeBudget {
	if ss.kind == kindConnect {
		return &s.handshakes[1]
	}
	return &s.handshakes[0]
}

// enterHandshake makes ss pending under its client address (a balancer's
// until its PROXY header is read) and closes the victim that makes room
// for it, if the budget was full.
func (s *Server) enterHandshake(ss *session) {
	ip, _ := addrOf(ss.client)
	victim := s.budgetOf(ss).enter(ss, ip, ss.cfg.MaxHandshakes)
	s.m.pendingHandshake(ss.kind, 1)
	if victim == nil {
		return
	}
	s.m.pendingHandshake(victim.kind, -1)
	victim.end(resultHandshakeLimit, errEvicted)
	victim.evict()
	s.releaseSlot(victim)
	s.warnRefusal(victim, resultHandshakeLimit)
}

// handshakeDone ends ss's pending state: its ClientHello is read, or it
// ended. It may be called more than once.
func (s *Server) handshakeDone(ss *session) {
	if s.budgetOf(ss).leave(ss) {
		s.m.pendingHandshake(ss.kind, -1)
	}
}

// admit arms the ClientHello deadline and, for a connection from a trusted
// balancer, reads its PROXY header under ProxyHeaderTimeout, then applies
// listen.allow and the connection limits to the client it names.
func (s *Server) admit(ss *session) (string, error) {
	ss.conn.SetDeadline(ss.start.Add(ss.cfg.ClientHelloTimeout))
	if s.closing.Load() {
		return resultShutdown, errors.New("server shutting down")
	}
	if !ss.viaProxy {
		return "", nil
	}
	ss.conn.SetReadDeadline(ss.start.Add(min(ss.cfg.ProxyHeaderTimeout, ss.cfg.ClientHelloTimeout)))
	if res, err := s.readProxy(ss); res != "" {
		return res, err
	}
	ss.conn.SetReadDeadline(ss.start.Add(ss.cfg.ClientHelloTimeout))
	res, err := s.checkAllow(ss)
	if res == "" {
		res, err = s.takeSlot(ss)
	}
	if res != "" {
		s.warnRefusal(ss, res)
		return res, err
	}
	// Pending under the balancer's address so far: from now on under the
	// client's, unless it was closed to make room meanwhile.
	if !s.budgetOf(ss).leave(ss) {
		return resultHandshakeLimit, errEvicted
	}
	s.m.pendingHandshake(ss.kind, -1)
	s.enterHandshake(ss)
	return "", nil
}

// pendingHandshakes returns the number of pending connections of kind.
func (s *Server) pendingHandshakes(kind string) int {
	return s.budgetOf(&session{kind: kind}).pendingCount()
}
