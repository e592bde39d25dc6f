//go:build !linux

package sni

import (
	"errors"
	"net"
)

// pipePool is Linux-only: elsewhere it is empty and the tunnel copies
// through a buffer.
type pipePool struct{}

func newPipePool() *pipePool { return nil }
func (*pipePool) close()     {}

// spliceDirections is Linux-only; elsewhere the tunnel copies through a
// buffer.
func (t *tunnel) spliceDirections(client, upstream *net.TCPConn) (up, down func() error, err error) {
	return nil, nil, errors.ErrUnsupported
}
