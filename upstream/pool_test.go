package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"no upstreams", Config{}, `route "r": no upstreams: want at least one host:port`},
		{"no port", Config{Addrs: []string{"10.0.0.1"}}, `upstream "10.0.0.1": want host:port`},
		{"duplicate", Config{Addrs: []string{"a:1", "a:1"}}, `upstream "a:1" listed twice`},
		{"balance", Config{Addrs: []string{"a:1"}, Balance: "random"}, `balance "random": want roundrobin or leastconn`},
		{"check kind", Config{Addrs: []string{"a:1"}, Check: Check{Kind: "icmp"}}, `health check "icmp": want tcp, tls or http`},
		{"relative path", Config{Addrs: []string{"a:1"}, Check: Check{Path: "v2/"}}, `health path "v2/": want an absolute path`},
		{"status", Config{Addrs: []string{"a:1"}, Check: Check{ExpectStatus: []int{99}}}, `expect_status 99: want an HTTP status from 100 to 599`},
		{"negative fall", Config{Addrs: []string{"a:1"}, Check: Check{Fall: -1}}, `want positive values`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Route = "r"
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewFillsDefaults(t *testing.T) {
	p := mustPool(t, Config{Addrs: []string{"a:1"}})
	c := p.cfg.Check
	if c.Kind != CheckTCP || c.Path != DefaultPath || c.Interval != DefaultInterval || c.Timeout != DefaultTimeout ||
		c.Fall != DefaultFall || c.Rise != DefaultRise || len(c.ExpectStatus) != 2 || p.cfg.Balance != RoundRobin {
		t.Fatalf("defaults not applied: %+v balance %q", c, p.cfg.Balance)
	}
	if s := p.Status()[0]; !s.Healthy || s.State != StateReady {
		t.Fatalf("a new host is %+v, want healthy and ready", s)
	}
}

func TestSetStateErrors(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs})
	if err := p.SetState("10.9.9.9:443", StateDrain); !errors.Is(err, ErrUnknownUpstream) {
		t.Errorf("SetState(unknown) = %v, want ErrUnknownUpstream", err)
	}
	if err := p.SetState(threeAddrs[0], "down"); !errors.Is(err, ErrInvalidState) {
		t.Errorf("SetState(bad state) = %v, want ErrInvalidState", err)
	}
	for _, s := range []string{"ready", "drain", "maint"} {
		if _, err := ParseState(s); err != nil {
			t.Errorf("ParseState(%q) = %v", s, err)
		}
	}
	if _, err := ParseState("Ready"); !errors.Is(err, ErrInvalidState) {
		t.Errorf("ParseState(Ready) = %v, want ErrInvalidState", err)
	}
}

func TestAdoptKeepsState(t *testing.T) {
	d := &switchDialer{down: map[string]bool{"10.0.0.1:443": true}}
	check := Check{Fall: 3, Rise: 2}
	old := mustPool(t, Config{Addrs: threeAddrs, Check: check, DialContext: d.DialContext})
	rounds(old, 3) // 10.0.0.1 goes down
	if err := old.SetState("10.0.0.2:443", StateMaint); err != nil {
		t.Fatal(err)
	}
	d.set("10.0.0.3:443", true)
	rounds(old, 2) // 10.0.0.3: two failures, one short of fall
	busy := old.hosts[2].Load()
	release := busy.Acquire()
	before := statusByAddr(old.Status())

	// The reload drops 10.0.0.2's neighbour order and adds 10.0.0.4.
	p := mustPool(t, Config{
		Addrs:       []string{"10.0.0.4:443", "10.0.0.3:443", "10.0.0.1:443", "10.0.0.2:443"},
		Check:       check,
		DialContext: d.DialContext,
	})
	p.Adopt(old)
	after := statusByAddr(p.Status())
	for _, a := range threeAddrs {
		if after[a] != before[a] {
			t.Errorf("%s after Adopt: %+v, want %+v", a, after[a], before[a])
		}
	}
	if s := after["10.0.0.4:443"]; !s.Healthy || s.State != StateReady || !s.LastCheck.IsZero() {
		t.Errorf("new host 10.0.0.4: %+v, want fresh, healthy and ready", s)
	}

	// The fall run carried over: one more failure makes three.
	rounds(p, 1)
	if statusByAddr(p.Status())["10.0.0.3:443"].Healthy {
		t.Error("10.0.0.3 still healthy: its two failures before the reload were lost")
	}
	// Connections opened before the reload release into the new pool.
	release()
	if n := statusByAddr(p.Status())["10.0.0.3:443"].ActiveConnections; n != 0 {
		t.Errorf("active connections %d after release, want 0", n)
	}
	// The old pool no longer checks hosts it handed over.
	d.set("10.0.0.1:443", false)
	n := d.count()
	rounds(old, 1)
	if d.count() != n {
		t.Errorf("the old pool still dials adopted hosts (%d dials)", d.count()-n)
	}
}

func TestAdoptNilAndSelf(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs})
	p.Adopt(nil)
	p.Adopt(p)
	if len(p.Candidates()) != 3 {
		t.Fatal("Adopt(nil) or Adopt(self) changed the pool")
	}
}

func statusByAddr(st []Status) map[string]Status {
	m := map[string]Status{}
	for _, s := range st {
		m[s.Upstream] = s
	}
	return m
}

func TestStatusJSON(t *testing.T) {
	d := &switchDialer{down: map[string]bool{"10.0.0.2:443": true}}
	p := mustPool(t, Config{Route: "registry", Addrs: threeAddrs, Check: Check{Fall: 1}, DialContext: d.DialContext})
	p.hosts[0].Load().Acquire()
	if err := p.SetState("10.0.0.3:443", StateMaint); err != nil { // never checked
		t.Fatal(err)
	}
	rounds(p, 1)
	if err := p.SetState("10.0.0.2:443", StateDrain); err != nil {
		t.Fatal(err)
	}

	data, err := json.Marshal(p.Status())
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"route": "registry", "upstream": "10.0.0.1:443", "state": "ready", "healthy": true, "active_connections": 1.0, "last_error": ""},
		{"route": "registry", "upstream": "10.0.0.2:443", "state": "drain", "healthy": false, "active_connections": 0.0,
			"last_error": "connect to 10.0.0.2:443: connection refused (fake)"},
		{"route": "registry", "upstream": "10.0.0.3:443", "state": "maint", "healthy": true, "active_connections": 0.0, "last_error": ""},
	}
	for i := range want {
		lc, checked := got[i]["last_check"].(string)
		delete(got[i], "last_check")
		if checked != (i < 2) {
			t.Errorf("entry %d: last_check present = %v, want %v (omitted when never checked)", i, checked, i < 2)
		}
		if checked {
			if ts, err := time.Parse(time.RFC3339, lc); err != nil || time.Since(ts) > time.Minute {
				t.Errorf("entry %d: last_check %q is not a recent RFC 3339 time: %v", i, lc, err)
			}
		}
		if g, w := mustJSON(t, got[i]), mustJSON(t, want[i]); g != w {
			t.Errorf("entry %d:\n got %s\nwant %s", i, g, w)
		}
	}
	var back []Status
	if err := json.Unmarshal(data, &back); err != nil || len(back) != 3 || back[1].State != StateDrain {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// switchDialer fails dials to the addresses marked down and counts dials.
type switchDialer struct {
	mu    sync.Mutex
	down  map[string]bool
	dials atomic.Int64
}

func (d *switchDialer) set(addr string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[addr] = down
}

func (d *switchDialer) count() int64 { return d.dials.Load() }

func (d *switchDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	d.mu.Lock()
	down := d.down[addr]
	d.mu.Unlock()
	if down {
		return nil, errors.New("connection refused (fake)")
	}
	c1, c2 := net.Pipe()
	_ = c2.Close()
	return c1, nil
}
