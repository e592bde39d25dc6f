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

// spliceDirs is Linux-only; elsewhere the tunnel copies through a buffer.
type spliceDirs struct{}

func (*spliceDirs) init(t *tunnel, client, upstream *net.TCPConn) (up, down direction, err error) {
	return nil, nil, errors.ErrUnsupported
}
