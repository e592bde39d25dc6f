package main

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// readChunk is the client's read size in the throughput scenarios.
const readChunk = 256 << 10

// dialSpliceDownload opens a spliced stream: ClientHello, then the download
// command; the upstream then writes as fast as the path allows.
func dialSpliceDownload(addr string, m messages) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, opTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(m.download); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dialBridgeDownload opens a bridged stream: TLS handshake, then the
// download command inside the session.
func dialBridgeDownload(addr string, cfg *tls.Config) (net.Conn, error) {
	c, err := dialTLS(addr, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte{cmdDownload}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// throughput opens streams connections with dial, then reads from all of
// them for d and returns the payload rate in Gbit/s (downstream: upstream
// to client, the direction of an image pull).
func throughput(streams int, d time.Duration, dial func() (net.Conn, error)) (float64, error) {
	conns := make([]net.Conn, 0, streams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range streams {
		c, err := dial()
		if err != nil {
			return 0, err
		}
		conns = append(conns, c)
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, c := range conns {
		wg.Go(func() { total.Add(drain(c, deadline)) })
	}
	wg.Wait()
	return float64(total.Load()) * 8 / time.Since(start).Seconds() / 1e9, nil
}

// drain reads c until deadline and returns the byte count.
func drain(c net.Conn, deadline time.Time) int64 {
	c.SetReadDeadline(deadline)
	buf := make([]byte, readChunk)
	var n int64
	for {
		m, err := c.Read(buf)
		n += int64(m)
		if err != nil {
			return n
		}
	}
}
