//go:build !linux

package sni

import (
	"context"
	"errors"
	"net"
	"time"
)

// dialTCP opens the splice tunnel's upstream TCP connection.
func (st *spliceTunnel) dialTCP(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
	return dialFunc(st.dialNet).dialUpstream(ctx, deadline, addr)
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
