//go:build !linux

package sni

import (
	"context"
	"errors"
	"net"
)

// writeBuffers writes bufs to c in one system call where it can.
func writeBuffers(c net.Conn, bufs ...[]byte) error {
	nb := net.Buffers(bufs)
	_, err := nb.WriteTo(c)
	return err
}

// dialTCP opens the splice tunnel's upstream TCP connection.
func (st *spliceTunnel) dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	return st.s.dial(ctx, "tcp", addr)
}

// pipePool is Linux-only: elsewhere it is empty and the tunnel copies
// through a buffer.
type pipePool struct{}

func newPipePool() *pipePool { return nil }
func (*pipePool) close()     {}

// spliceDirs is Linux-only; elsewhere the tunnel copies through a buffer.
type spliceDirs struct{}

func (*spliceDirs) init(st *spliceTunnel, client, upstream sock) (up, down direction, err error) {
	return nil, nil, errors.ErrUnsupported
}

func (*spliceDirs) wake(*parker) {}

// parker is Linux-only: elsewhere idle directions keep their goroutine.
type parker struct{}

const defaultParkAfter = 0

var errParked = errors.New("parked")

func newParker() *parker { return nil }
func (*parker) stop()    {}
