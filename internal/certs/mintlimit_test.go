package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// addrConn is a net.Conn that only has a remote address: what the minter
// reads from a handshake's ClientHelloInfo.Conn.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func helloFrom(name, client string) *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{ServerName: name, Conn: addrConn{remote: &net.TCPAddr{IP: net.ParseIP(client), Port: 40000}}}
}

// The leaf cache is an LRU: at MaxLeaves, a new name drops the leaf
// served least recently, not the oldest one (a name nodes keep using
// stays cached however many others are minted) and not the new one.
func TestMinterCacheIsLRU(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	var mints mintCounter
	cfg := ca.config()
	cfg.MaxLeaves, cfg.OnMintFunc = 2, mints.hook
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const a, b, c = "a.registry.example.com", "b.registry.example.com", "c.registry.example.com"
	mustGet(t, m, a)
	mustGet(t, m, b)
	mustGet(t, m, a) // a is now the most recently served
	mustGet(t, m, c) // full: drops b
	mustGet(t, m, a)
	mustGet(t, m, c)
	if got := mints.count(a); got != 1 {
		t.Errorf("%s minted %d times, want 1: the LRU dropped the leaf served most recently", a, got)
	}
	mustGet(t, m, b)
	if got := mints.count(b); got != 2 {
		t.Errorf("%s minted %d times, want 2 (dropped as least recently served, then minted again)", b, got)
	}
	if n := m.leaves.len(); n != 2 {
		t.Errorf("cache holds %d leaves, want MaxLeaves 2", n)
	}
}

// A flood of 1,000 new names from one client address mints at most the
// burst (then MintRate a second), while another client still gets its
// names and names already minted stay served to everyone.
func TestMinterRatePerClient(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	clock := newFakeClock(time.Now())
	var mints mintCounter
	cfg := ca.config()
	cfg.Now, cfg.OnMintFunc = clock.Now, mints.hook
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const attacker, other = "198.51.100.7", "198.51.100.8"
	minted, limited := 0, 0
	for i := range 1000 {
		_, err := m.GetCertificate(helloFrom(fmt.Sprintf("n%d.registry.example.com", i), attacker))
		switch {
		case err == nil:
			minted++
		case errors.Is(err, ErrMintRateLimited):
			limited++
		default:
			t.Fatalf("name %d: %v", i, err)
		}
	}
	if minted != DefaultMintBurst || limited != 1000-DefaultMintBurst {
		t.Fatalf("flood from one client: %d minted, %d rate-limited; want %d and %d", minted, limited, DefaultMintBurst, 1000-DefaultMintBurst)
	}
	if _, err := m.GetCertificate(helloFrom("n0.registry.example.com", attacker)); err != nil {
		t.Errorf("a name already minted was refused to the limited client: %v", err)
	}
	for i := range 5 {
		if _, err := m.GetCertificate(helloFrom(fmt.Sprintf("o%d.registry.example.com", i), other)); err != nil {
			t.Fatalf("another client was refused a new name during the flood: %v", err)
		}
	}
	clock.Advance(time.Second)
	for i := range int(DefaultMintRate) {
		if _, err := m.GetCertificate(helloFrom(fmt.Sprintf("later%d.registry.example.com", i), attacker)); err != nil {
			t.Fatalf("one second later, new name %d of %v: %v", i+1, DefaultMintRate, err)
		}
	}
	_, err = m.GetCertificate(helloFrom("over.registry.example.com", attacker))
	var tmp interface{ Temporary() bool }
	if !errors.As(err, &tmp) || !tmp.Temporary() {
		t.Errorf("over the rate: %v, want a temporary ErrMintRateLimited", err)
	}
}

// CheckName answers what GetCertificate would, without minting or
// spending the client's budget.
func TestMinterCheckName(t *testing.T) {
	ca := newTestCA(t, "registry.example.com")
	var mints mintCounter
	cfg := ca.config()
	cfg.Names, cfg.MintBurst, cfg.OnMintFunc = []string{"*.registry.example.com"}, 1, mints.hook
	cfg.Now = newFakeClock(time.Now()).Now // no refill during the test
	m, err := NewMinter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const client = "192.0.2.9"
	tests := []struct {
		name    string
		sni     string
		mint    bool // GetCertificate it afterwards
		wantErr error
		errHas  string
	}{
		{name: "new name in budget, twice (nothing spent)", sni: "a.registry.example.com"},
		{name: "again", sni: "a.registry.example.com", mint: true},
		{name: "cached name, budget spent", sni: "a.registry.example.com"},
		{name: "new name, budget spent", sni: "b.registry.example.com", wantErr: ErrMintRateLimited},
		{name: "name outside the route", sni: "registry.example.com", errHas: "mints only for"},
		{name: "two labels below the wildcard", sni: "x.a.registry.example.com", errHas: "mints only for"},
		{name: "no SNI", sni: "", wantErr: ErrNoServerName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.CheckName(helloFrom(tt.sni, client))
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr), tt.errHas == "" && tt.wantErr == nil && err != nil:
				t.Fatalf("CheckName(%q) = %v, want %v", tt.sni, err, tt.wantErr)
			case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
				t.Fatalf("CheckName(%q) = %v, want an error with %q", tt.sni, err, tt.errHas)
			}
			if tt.mint {
				if _, err := m.GetCertificate(helloFrom(tt.sni, client)); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if n := mints.count("a.registry.example.com"); n != 1 {
		t.Errorf("a.registry.example.com minted %d times, want 1 (CheckName mints nothing)", n)
	}
}
