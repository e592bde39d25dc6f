package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// opTimeout bounds every connection of every scenario.
const opTimeout = 5 * time.Second

var errBadEcho = errors.New("echo came back different")

// spliceEcho returns a factory of operations that each dial addr, send
// the ClientHello with an echo command, read the 64 bytes back and close.
func spliceEcho(addr string, m messages) func() func() error {
	return func() func() error {
		buf := make([]byte, echoSize)
		d := net.Dialer{Timeout: opTimeout}
		return func() error {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(opTimeout))
			if _, err := c.Write(m.echo); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
			if !bytes.Equal(buf, m.payload) {
				return errBadEcho
			}
			return nil
		}
	}
}

// handshakeStats counts what the bridge handshakes negotiated.
type handshakeStats struct {
	resumed atomic.Int64
	total   atomic.Int64
	once    sync.Once
	curve   string
	version string
}

func (s *handshakeStats) record(cs tls.ConnectionState) {
	s.total.Add(1)
	if cs.DidResume {
		s.resumed.Add(1)
	}
	s.once.Do(func() {
		s.curve = cs.CurveID.String()
		s.version = tls.VersionName(cs.Version)
	})
}

// clientTLS is the configuration of the bench's TLS client toward t: it
// verifies the bridge route's serve certificate, or, for the direct
// baseline, the upstream's certificate while presenting the edge's client
// certificate (what the proxies do on their upstream leg).
func clientTLS(t target, p *material, cache tls.ClientSessionCache, curves []tls.CurveID) *tls.Config {
	cfg := &tls.Config{ServerName: bridgeName, RootCAs: p.roots, ClientSessionCache: cache, CurvePreferences: curves}
	if t.Direct {
		cfg.ServerName = upstreamName
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return cfg
}

// dialTLS dials addr and completes a handshake under opTimeout.
func dialTLS(addr string, cfg *tls.Config) (*tls.Conn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: opTimeout}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// bridgeEcho returns a factory of operations that each complete a TLS
// handshake with addr (resuming when cfg has a session cache), send an
// echo command, read the 64 bytes back through the proxy's upstream mTLS
// session, and close.
func bridgeEcho(addr string, cfg *tls.Config, m messages, st *handshakeStats) func() func() error {
	msg := append([]byte{cmdEcho}, m.payload...)
	return func() func() error {
		buf := make([]byte, echoSize)
		return func() error {
			c, err := dialTLS(addr, cfg)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(opTimeout))
			if _, err := c.Write(msg); err != nil {
				return err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
			if !bytes.Equal(buf, m.payload) {
				return errBadEcho
			}
			st.record(c.ConnectionState())
			return nil
		}
	}
}
