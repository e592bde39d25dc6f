package main

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseDurations(t *testing.T) {
	tests := []struct {
		name, in string
		want     []time.Duration
		wantErr  bool
	}{
		{name: "issue 21's", in: "0.2s,2s", want: []time.Duration{200 * time.Millisecond, 2 * time.Second}},
		{name: "sorted and distinct", in: "2s, 200ms,0.2s", want: []time.Duration{200 * time.Millisecond, 2 * time.Second}},
		{name: "no unit", in: "2", wantErr: true},
		{name: "zero", in: "0s", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDurations(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseDurations(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Errorf("parseDurations(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestIdleNames(t *testing.T) {
	tests := []struct {
		name, sc string
		n        int
		ok       bool
	}{
		{name: "a fill", sc: idleScenario(20000), n: 20000, ok: true},
		{name: "the worst is no fill", sc: idleWorst},
		{name: "results before issue 21", sc: "idle-mem"},
		{name: "other scenario", sc: "splice-rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, ok := idleCount(tt.sc); n != tt.n || ok != tt.ok {
				t.Errorf("idleCount(%q) = %d, %v; want %d, %v", tt.sc, n, ok, tt.n, tt.ok)
			}
		})
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
		secs float64
	}{{200 * time.Millisecond, "0.2s", 0.2}, {2 * time.Second, "2s", 2}, {1500 * time.Millisecond, "1.5s", 1.5}} {
		if got := readLabel(tt.d); got != tt.want || readSeconds(got) != tt.secs {
			t.Errorf("readLabel(%v) = %q (%v s), want %q (%v s)", tt.d, got, readSeconds(got), tt.want, tt.secs)
		}
	}
	for n, want := range map[int]string{7: "7", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestIdleFillValues: RSS per tunnel is each reading's RSS less the
// baseline's over the tunnels open, under the reading's own key; the
// opening rate is the tunnels over the time they took.
func TestIdleFillValues(t *testing.T) {
	f := idleFill{
		before:   memSample{rssKiB: 10000, fds: fdCount{Total: 20, Sockets: 10}},
		reads:    []idleRead{{label: "0.2s", rssKiB: 19000, late: 3 * time.Millisecond}, {label: "2s", rssKiB: 15000}},
		fds:      fdCount{Total: 2020, Sockets: 2010},
		open:     1000,
		openTime: 250 * time.Millisecond,
	}
	v, err := f.values()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"kib_conn_0.2s": 9, "kib_conn_2s": 5, "fds_conn": 2, "sockets_conn": 2, "pipes_conn": 0,
		"open": 1000, "open_s": 0.25, "open_conn_s": 4000, "rss_mib": 15000.0 / 1024, "read_late_ms": 3}
	for k, w := range want {
		if v[k] != w {
			t.Errorf("%s = %v, want %v", k, v[k], w)
		}
	}
	if _, err := (idleFill{}).values(); err == nil {
		t.Error("a fill without an open tunnel gave values, want an error")
	}
}

// TestIdleMemReadsEveryDelay fills the test process itself (client and
// upstream sides of each tunnel in one process, so 2 sockets per tunnel)
// and checks that each reading has its value and that every tunnel was
// verified and counted.
func TestIdleMemReadsEveryDelay(t *testing.T) {
	hello, err := captureClientHello(spliceName)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	p, err := loadPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	u := newUpstream(p)
	ln := listen(t)
	done := make(chan struct{})
	go func() { u.serve(ln, u.handleSplice); close(done) }()
	r := &runner{msgs: newMessages(hello), idleReads: []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}}
	res, err := r.idleMem(40)(r, target{Name: "self", Splice: ln.Addr().String(), PID: os.Getpid()}, 1)
	ln.Close()
	<-done
	u.wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Scenario != "idle-mem-40" || res.Values["open"] != 40 || res.Values["failed"] != 0 {
		t.Fatalf("scenario %s, open %v, failed %v; want idle-mem-40 with 40 open, 0 failed", res.Scenario, res.Values["open"], res.Values["failed"])
	}
	for _, k := range []string{"kib_conn_0.01s", "kib_conn_0.05s", "open_conn_s"} {
		if _, ok := res.Values[k]; !ok {
			t.Errorf("no %s in %v", k, res.Values)
		}
	}
	if fds := res.Values["sockets_conn"]; fds < 2 || fds > 2.2 {
		t.Errorf("sockets per tunnel = %v, want 2 (the client's and the upstream's, both in this process)", fds)
	}
}
