//go:build !linux

package sni

import "net"

// eventLoop is Linux-only (epoll and splice); elsewhere every connection
// runs on the goroutine path.
type eventLoop struct{}

func (*eventLoop) stop() {}

func (s *Server) serveLoop(net.Listener, string) (error, bool) { return nil, false }

func (s *Server) stopLoops() {}

func setListenerNoDelay(*net.TCPListener) {}
