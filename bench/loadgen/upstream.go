package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// downloadChunk is the write size of the download command.
const downloadChunk = 256 << 10

// upstream is the server behind every proxy: on the splice address a
// plain TCP server that reads one TLS record (the ClientHello) and then a
// command; on the bridge address a TLS server that requires a client
// certificate signed by the bench CA and then reads a command.
type upstream struct {
	tlsConfig *tls.Config
	chunks    sync.Pool
	wg        sync.WaitGroup
	stats     upstreamStats
}

func newUpstream(p *material) *upstream {
	u := &upstream{tlsConfig: &tls.Config{
		Certificates: []tls.Certificate{p.upstream},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.roots,
	}}
	u.chunks.New = func() any { return make([]byte, downloadChunk) }
	return u
}

// serve accepts on ln until it is closed, handling each connection with h.
func (u *upstream) serve(ln net.Listener, h func(net.Conn)) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and friends: back off
			continue
		}
		u.wg.Go(func() { h(c) })
	}
}

func (u *upstream) handleSplice(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return // a health check connects and closes
	}
	n := int64(hdr[3])<<8 | int64(hdr[4])
	if _, err := io.CopyN(io.Discard, c, n); err != nil {
		return
	}
	u.command(c)
}

func (u *upstream) handleBridge(c net.Conn) {
	defer c.Close()
	tc := tls.Server(c, u.tlsConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return
	}
	u.stats.record(tc.ConnectionState())
	tc.SetReadDeadline(time.Now().Add(10 * time.Second))
	u.command(tc)
}

// command reads one command byte and carries it out.
func (u *upstream) command(c net.Conn) {
	var cmd [1]byte
	if _, err := io.ReadFull(c, cmd[:]); err != nil {
		return
	}
	switch cmd[0] {
	case cmdEcho:
		var buf [echoSize]byte
		if _, err := io.ReadFull(c, buf[:]); err != nil {
			return
		}
		if _, err := c.Write(buf[:]); err != nil {
			return
		}
		waitEOF(c, time.Minute)
	case cmdDownload:
		buf := u.chunks.Get().([]byte)
		defer u.chunks.Put(buf)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	case cmdIdle:
		if _, err := c.Write(cmd[:]); err != nil {
			return
		}
		waitEOF(c, 0)
	}
}

// waitEOF reads until the peer closes (or d passes, when d > 0).
func waitEOF(c net.Conn, d time.Duration) {
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	c.SetReadDeadline(deadline)
	var buf [512]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			return
		}
	}
}
