//go:build !linux

package sni

import (
	"errors"
	"net"
)

// spliceDirections is Linux-only; elsewhere the tunnel copies through a
// buffer.
func (t *tunnel) spliceDirections(client, upstream *net.TCPConn) (up, down func() error, err error) {
	return nil, nil, errors.ErrUnsupported
}
