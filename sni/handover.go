package sni

// StopAccepting closes the listeners and lets every connection go on,
// those still in their handshakes included: for a process that handed its
// listening sockets to another (an upgrade), where each connection it
// accepted must finish as if nothing happened. Serve returns
// ErrServerClosed. Shutdown afterwards drains what is left.
func (s *Server) StopAccepting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
}

// Handshaking is the number of connections that have not reached their
// tunnel yet: reading the ClientHello, in the TLS handshake, or dialing
// the upstream. Shutdown would cut these; after StopAccepting, wait for
// it to reach 0 first.
func (s *Server) Handshaking() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for ss := range s.sessions {
		if !ss.inTunnel.Load() {
			n++
		}
	}
	return n
}
