package upstream

import (
	"slices"
	"testing"
)

var threeAddrs = []string{"10.0.0.1:443", "10.0.0.2:443", "10.0.0.3:443"}

func TestRoundRobinSpreadsEvenly(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs})
	const calls = 300
	first := map[string]int{}
	for range calls {
		c := addrsOf(p.Candidates())
		if len(c) != 3 {
			t.Fatalf("Candidates() = %v, want all three hosts", c)
		}
		// The order to try is always the configured cycle, rotated.
		i := slices.Index(threeAddrs, c[0])
		want := append(slices.Clone(threeAddrs[i:]), threeAddrs[:i]...)
		if !slices.Equal(c, want) {
			t.Fatalf("Candidates() = %v, want the rotation %v", c, want)
		}
		first[c[0]]++
	}
	for _, a := range threeAddrs {
		if first[a] != calls/3 {
			t.Errorf("%s tried first %d times in %d calls, want %d", a, first[a], calls, calls/3)
		}
	}
}

func TestRoundRobinSkipsUnavailableHosts(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs})
	if err := p.SetState(threeAddrs[1], StateDrain); err != nil {
		t.Fatal(err)
	}
	first := map[string]int{}
	for range 100 {
		c := addrsOf(p.Candidates())
		if len(c) != 2 || slices.Contains(c, threeAddrs[1]) {
			t.Fatalf("Candidates() = %v, want the two ready hosts", c)
		}
		first[c[0]]++
	}
	if first[threeAddrs[0]] != 50 || first[threeAddrs[2]] != 50 {
		t.Errorf("first choices %v, want 50 each", first)
	}
}

func TestLeastConnPrefersTheLeastLoaded(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs, Balance: LeastConn})
	hosts := map[string]*Host{}
	for _, h := range p.Candidates() {
		hosts[h.Addr()] = h
	}
	var releases []func()
	acquire := func(addr string, n int) {
		for range n {
			releases = append(releases, hosts[addr].Acquire())
		}
	}
	acquire(threeAddrs[0], 2)
	acquire(threeAddrs[1], 1)
	for range 5 {
		got := addrsOf(p.Candidates())
		want := []string{threeAddrs[2], threeAddrs[1], threeAddrs[0]}
		if !slices.Equal(got, want) {
			t.Fatalf("Candidates() = %v, want least loaded first %v", got, want)
		}
	}
	for _, r := range releases {
		r()
	}
	// All idle: ties are broken round-robin.
	first := map[string]int{}
	for range 30 {
		first[p.Candidates()[0].Addr()]++
	}
	for _, a := range threeAddrs {
		if first[a] != 10 {
			t.Errorf("with equal load %s came first %d times in 30, want 10", a, first[a])
		}
	}
}

func TestAcquireReleaseIsIdempotent(t *testing.T) {
	p := mustPool(t, Config{Addrs: threeAddrs[:1]})
	h := p.Candidates()[0]
	r1, r2 := h.Acquire(), h.Acquire()
	if h.Active() != 2 {
		t.Fatalf("Active() = %d after two Acquire, want 2", h.Active())
	}
	r1()
	r1()
	r1()
	if h.Active() != 1 {
		t.Fatalf("Active() = %d after releasing one connection three times, want 1", h.Active())
	}
	r2()
	if h.Active() != 0 {
		t.Fatalf("Active() = %d, want 0", h.Active())
	}
}

func BenchmarkCandidates(b *testing.B) {
	for _, bal := range []Balance{RoundRobin, LeastConn} {
		b.Run(string(bal), func(b *testing.B) {
			p := mustPool(b, Config{Addrs: threeAddrs, Balance: bal})
			b.ReportAllocs()
			for b.Loop() {
				_ = p.Candidates()
			}
		})
	}
}
