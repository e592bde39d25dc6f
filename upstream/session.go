package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// dialFunc opens the TCP connection of a check or probe.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// minVerdictWait is the least time a TLS 1.3 client waits after its
// handshake for the server to refuse its certificate (see confirm).
const minVerdictWait = 250 * time.Millisecond

// userAgent is sent with every HTTP check and probe.
const userAgent = "snigate-health-check"

// session is one TLS connection of a check or a probe, with what its
// handshake showed. The zero value is ready for open; close is idempotent.
type session struct {
	conn       *tls.Conn
	stop       func() bool // stops the context watcher
	serverName string      // SNI sent, also the Host of HTTP requests
	requested  bool        // the server asked for a client certificate
	verified   bool        // the server's certificate passed our verification
	notAfter   time.Time   // expiry of the server's leaf certificate
	elapsed    time.Duration
	tickets    *ticketWatch
}

// sessionOptions adjust the client configuration of one session.
type sessionOptions struct {
	noClientCert bool                   // present no certificate even if base has one
	sessions     tls.ClientSessionCache // used when base has no cache of its own; nil: a cache for this session only
	nextProtos   []string               // nil: base's
}

// open dials addr and completes a TLS handshake with a clone of base.
// ctx bounds the dial, the handshake and every later read and write. On
// error the connection is closed but the fields the handshake reached
// (requested, verified, notAfter) stay readable.
func (s *session) open(ctx context.Context, dial dialFunc, addr string, base *tls.Config, opt sessionOptions) error {
	start := time.Now()
	raw, err := dial(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", addr, err)
	}
	s.conn = tls.Client(raw, s.instrument(base, addr, opt))
	s.stop = watchContext(ctx, raw)
	if err := s.conn.HandshakeContext(ctx); err != nil {
		s.close()
		return fmt.Errorf("tls handshake with %s (server name %q): %w%s", addr, s.serverName, err, s.hint(err))
	}
	s.elapsed = time.Since(start)
	return nil
}

// watchContext applies ctx's deadline to conn and unblocks it when ctx is
// cancelled.
func watchContext(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

// instrument clones base and hooks the handshake so that s learns whether
// the server asked for a client certificate, whether the server's
// certificate verified, and when it expires.
func (s *session) instrument(base *tls.Config, addr string, opt sessionOptions) *tls.Config {
	cfg := base.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = hostOf(addr)
	}
	s.serverName = cfg.ServerName
	if opt.nextProtos != nil {
		cfg.NextProtos = opt.nextProtos
	}
	pick := clientCertFunc(cfg)
	if opt.noClientCert {
		pick = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return new(tls.Certificate), nil }
	}
	cfg.Certificates = nil
	cfg.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		s.requested = true
		return pick(cri)
	}
	cfg.VerifyConnection = s.verifyFunc(cfg.VerifyConnection)
	cache := sessionStore(base, addr, opt)
	s.tickets = &ticketWatch{cache: cache}
	cfg.ClientSessionCache = s.tickets
	return cfg
}

// sessionStore is where a session's tickets go. A base configuration
// with a session cache of its own (a bridge route's, scoped to the client
// certificate and trust in force) shares it, keyed by address as traffic
// keys it; a session without our client certificate never does, since a
// resumption would present no certificate where traffic presents one.
func sessionStore(base *tls.Config, addr string, opt sessionOptions) tls.ClientSessionCache {
	switch {
	case opt.noClientCert:
		return tls.NewLRUClientSessionCache(1)
	case base.ClientSessionCache != nil:
		return addrSessions{cache: base.ClientSessionCache, addr: addr}
	case opt.sessions != nil:
		return opt.sessions
	}
	return tls.NewLRUClientSessionCache(1)
}

// addrSessions keys a shared session cache by upstream address and
// server name, the keys bridged traffic uses for the same sessions.
type addrSessions struct {
	cache tls.ClientSessionCache
	addr  string
}

func (s addrSessions) Get(key string) (*tls.ClientSessionState, bool) {
	return s.cache.Get(s.addr + " " + key)
}

func (s addrSessions) Put(key string, cs *tls.ClientSessionState) {
	s.cache.Put(s.addr+" "+key, cs)
}

// verifyFunc runs after crypto/tls verified the server's chain (or skipped
// that under InsecureSkipVerify), on full and resumed handshakes alike.
func (s *session) verifyFunc(next func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) > 0 {
			s.notAfter = cs.PeerCertificates[0].NotAfter
		}
		if next != nil {
			if err := next(cs); err != nil {
				return err
			}
		}
		s.verified = true
		return nil
	}
}

// clientCertFunc returns how cfg picks its client certificate, the way
// crypto/tls does: GetClientCertificate, else the first of Certificates the
// server's request supports, else none.
func clientCertFunc(cfg *tls.Config) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if cfg.GetClientCertificate != nil {
		return cfg.GetClientCertificate
	}
	certs := cfg.Certificates
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		for i := range certs {
			if cri.SupportsCertificate(&certs[i]) == nil {
				return &certs[i], nil
			}
		}
		return new(tls.Certificate), nil
	}
}

// confirm waits for the server's verdict on our client certificate. In TLS
// 1.3 the client's handshake completes before the server has read that
// certificate, so a server that refuses it says so with an alert that only
// a later read sees. The read ends with an alert or a close (refused), or
// with a session ticket, application data or silence until the wait is
// over (accepted). It returns at once when there is nothing to wait for:
// TLS 1.2 (the verdict is part of the handshake) or no certificate asked.
func (s *session) confirm(ctx context.Context) error {
	if !s.requested || s.conn.ConnectionState().Version < tls.VersionTLS13 {
		return nil
	}
	wait := max(minVerdictWait, 2*s.elapsed)
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)/2)
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(wait))
	s.tickets.armed.Store(s.conn)
	_, err := s.conn.Read(make([]byte, 1))
	s.tickets.armed.Store(nil)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for the server to accept our client certificate: %w", ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil
	case errors.Is(err, io.EOF):
		return errors.New("the server closed the connection right after the handshake: it probably refused our client certificate")
	}
	return fmt.Errorf("the server refused the session after the handshake: %w%s", err, s.hint(err))
}

// get sends GET path with Host set to host over the session and returns the
// response, its body read (up to 64 KiB) and closed. The request asks the
// server to close the connection.
func (s *session) get(ctx context.Context, host, path string) (*http.Response, error) {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, fmt.Errorf("health path %q: %w", path, err)
	}
	u.Scheme, u.Host = "https", hostHeader(host)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Close = true
	req.Header.Set("User-Agent", userAgent)
	if err := req.Write(s.conn); err != nil {
		return nil, fmt.Errorf("GET %s: %w%s", path, err, s.hint(err))
	}
	resp, err := http.ReadResponse(bufio.NewReader(s.conn), req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w%s", path, err, s.hint(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp, nil
}

// hint explains err with what the handshake showed: a server that asked
// for a client certificate and then failed the session most likely refused
// ours (TLS 1.2 servers often say only "handshake failure").
func (s *session) hint(err error) string {
	if h := hint(err); h != "" {
		return h
	}
	if s.requested && s.verified && isRemoteAlert(err) {
		return refusedCertHint
	}
	return ""
}

func (s *session) close() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
}

// ticketWatch is the client session cache of one session. Once armed by
// confirm, a stored session ticket ends confirm's read: a server sends
// tickets after it has accepted the client's certificate.
type ticketWatch struct {
	cache tls.ClientSessionCache
	armed atomic.Pointer[tls.Conn]
}

func (t *ticketWatch) Get(key string) (*tls.ClientSessionState, bool) { return t.cache.Get(key) }

func (t *ticketWatch) Put(key string, cs *tls.ClientSessionState) {
	t.cache.Put(key, cs)
	if c := t.armed.Load(); c != nil && cs != nil {
		_ = c.SetReadDeadline(time.Unix(1, 0))
	}
}

// hostOf returns the host part of a host:port address.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// hostHeader brackets an IPv6 literal for use as an HTTP Host.
func hostHeader(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
