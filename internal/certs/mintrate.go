package certs

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Defaults of MinterConfig.MintRate and MintBurst: one client address may
// have new names minted at 10 a second, 20 at once; names already cached
// cost nothing.
const (
	DefaultMintRate  = 10.0
	DefaultMintBurst = 20
)

// mintSourcesMax bounds the client addresses whose budget is tracked;
// beyond it, budgets that have refilled (the same as untracked) are
// dropped, then any.
const mintSourcesMax = 4096

// ErrMintRateLimited is matched (errors.Is) by the error Minter returns
// when a client asks for new names faster than MintRate. Its Temporary
// method reports true: the name may be minted later.
var ErrMintRateLimited = errors.New("certs: this client asks for new certificate names too fast")

// rateLimitError is a refused mint for one client address.
type rateLimitError struct {
	client netip.Addr
	rate   float64
	burst  int
}

func (e *rateLimitError) Error() string {
	return fmt.Sprintf("%v: client %s may have at most %d new names minted at once and %g a second after that; names already minted are not limited",
		ErrMintRateLimited, e.client, e.burst, e.rate)
}

func (e *rateLimitError) Is(target error) bool { return target == ErrMintRateLimited }
func (e *rateLimitError) Temporary() bool      { return true }

// mintLimiter is a token bucket per client address: each new name minted
// for a client takes a token; tokens come back at rate a second, up to
// burst. A rate <= 0 means no limit.
type mintLimiter struct {
	rate  float64
	burst int

	mu      sync.Mutex
	buckets map[netip.Addr]*mintBucket
}

type mintBucket struct {
	tokens float64
	at     time.Time
}

// level refills b to now and returns its tokens.
func (l *mintLimiter) level(b *mintBucket, now time.Time) float64 {
	if d := now.Sub(b.at).Seconds(); d > 0 {
		b.tokens = min(float64(l.burst), b.tokens+d*l.rate)
		b.at = now
	}
	return b.tokens
}

// allow reports whether client may have one more new name minted now;
// take also spends the token. An unknown client (no IP address) is not
// limited.
func (l *mintLimiter) allow(client netip.Addr, now time.Time, take bool) error {
	if l.rate <= 0 || !client.IsValid() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[client]
	if b == nil {
		b = &mintBucket{tokens: float64(l.burst), at: now}
	}
	if l.level(b, now) < 1 {
		return &rateLimitError{client: client, rate: l.rate, burst: l.burst}
	}
	if take {
		b.tokens--
		l.store(client, b, now)
	}
	return nil
}

// store tracks b, first pruning when too many clients are tracked.
func (l *mintLimiter) store(client netip.Addr, b *mintBucket, now time.Time) {
	if l.buckets == nil {
		l.buckets = map[netip.Addr]*mintBucket{}
	}
	if _, ok := l.buckets[client]; !ok && len(l.buckets) >= mintSourcesMax {
		l.prune(now)
	}
	l.buckets[client] = b
}

// prune drops the full buckets, or if none is full, half of them.
func (l *mintLimiter) prune(now time.Time) {
	for a, b := range l.buckets {
		if l.level(b, now) >= float64(l.burst) {
			delete(l.buckets, a)
		}
	}
	for a := range l.buckets {
		if len(l.buckets) < mintSourcesMax/2 {
			return
		}
		delete(l.buckets, a)
	}
}

// clientAddr is the IP address of conn's peer, when it has one.
func clientAddr(conn net.Conn) netip.Addr {
	if conn == nil {
		return netip.Addr{}
	}
	switch a := conn.RemoteAddr().(type) {
	case *net.TCPAddr:
		if a == nil {
			return netip.Addr{}
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case nil:
		return netip.Addr{}
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}
		}
		return ap.Addr().Unmap()
	}
}
