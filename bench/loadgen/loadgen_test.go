package main

import (
	"bytes"
	"crypto/tls"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		name, in string
		want     target
		wantErr  bool
	}{
		{name: "full", in: "name=haproxy,splice=127.0.0.1:1,bridge=127.0.0.1:2,pid=42",
			want: target{Name: "haproxy", Splice: "127.0.0.1:1", Bridge: "127.0.0.1:2", PID: 42}},
		{name: "direct", in: "name=direct,splice=a:1,direct=1", want: target{Name: "direct", Splice: "a:1", Direct: true}},
		{name: "snigate cache", in: "name=snigate-cache,http=a:1,purge=127.0.0.1:9", want: target{Name: "snigate-cache", HTTP: "a:1", Purge: "127.0.0.1:9"}},
		{name: "nginx cache", in: "name=nginx-cache,http=a:1,cachedir=/tmp/c", want: target{Name: "nginx-cache", HTTP: "a:1", CacheDir: "/tmp/c"}},
		{name: "no name", in: "splice=a:1", wantErr: true},
		{name: "unknown key", in: "name=x,port=1", wantErr: true},
		{name: "bad pid", in: "name=x,pid=abc", wantErr: true},
		{name: "no equals", in: "name=x,oops", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTarget(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseTarget(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("parseTarget(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestStats(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   float64
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7},
		{"p50 of 4", ms(1, 2, 3, 4), 50, 2},
		{"p99 of 100", ms(seq(100)...), 99, 99},
		{"p100", ms(1, 2, 3), 100, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// TestClientHelloCarriesSNI checks that the captured bytes are a ClientHello
// that crypto/tls itself parses, with the bench's server name.
func TestClientHelloCarriesSNI(t *testing.T) {
	hello, err := captureClientHello(spliceName)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	got := make(chan string, 1)
	go func() {
		srv := tls.Server(c2, &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			got <- chi.ServerName
			return nil, net.ErrClosed
		}})
		srv.Handshake()
		c2.Close()
	}()
	c1.Write(hello)
	if name := <-got; name != spliceName {
		t.Errorf("server name = %q, want %q", name, spliceName)
	}
}

// TestUpstreamCommands runs the upstream and the client operations of each
// scenario against it directly (the direct baseline).
func TestUpstreamCommands(t *testing.T) {
	dir := t.TempDir()
	if err := writePKI(dir); err != nil {
		t.Fatal(err)
	}
	p, err := loadPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	hello, err := captureClientHello(spliceName)
	if err != nil {
		t.Fatal(err)
	}
	m := newMessages(hello)
	u := newUpstream(p)
	sl, bl := listen(t), listen(t)
	done := make(chan struct{}, 2)
	go func() { u.serve(sl, u.handleSplice); done <- struct{}{} }()
	go func() { u.serve(bl, u.handleBridge); done <- struct{}{} }()
	direct := target{Name: "direct", Splice: sl.Addr().String(), Bridge: bl.Addr().String(), Direct: true}
	var st handshakeStats
	tests := []struct {
		name string
		run  func() error
	}{
		{"splice echo", spliceEcho(direct.Splice, m)()},
		{"bridge echo", bridgeEcho(direct.Bridge, clientTLS(direct, p, nil, nil), m, &st)()},
		{"splice download", func() error {
			return download(func() (net.Conn, error) { return dialSpliceDownload(direct.Splice, m) })
		}},
		{"bridge download", func() error {
			return download(func() (net.Conn, error) { return dialBridgeDownload(direct.Bridge, clientTLS(direct, p, nil, nil)) })
		}},
		{"idle", func() error {
			opened := openIdle(direct.Splice, m, 3)
			closeAll(opened.conns)
			if opened.failed > 0 {
				return opened.first
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err != nil {
				t.Fatal(err)
			}
		})
	}
	sl.Close()
	bl.Close()
	<-done
	<-done
	u.wg.Wait()
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// download reads one chunk of the download command's stream.
func download(dial func() (net.Conn, error)) error {
	c, err := dial()
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(opTimeout))
	buf := make([]byte, 1024)
	_, err = c.Read(buf)
	return err
}

func TestVerdict(t *testing.T) {
	s := summarize([]Result{
		{Scenario: "splice-rate", Target: "snigate", Round: 1, Values: map[string]float64{"conn_s": 100, "p99_ms": 2}},
		{Scenario: "splice-rate", Target: "haproxy", Round: 1, Values: map[string]float64{"conn_s": 90, "p99_ms": 3}},
		{Scenario: "splice-rate", Target: "nginx", Round: 1, Values: map[string]float64{"conn_s": 110, "p99_ms": 1}},
		{Scenario: "idle-mem", Target: "snigate", Round: 1, Values: map[string]float64{"kib_conn": 9, "fds_conn": 2.004}},
		{Scenario: "bridge-full", Target: "snigate", Round: 1, Values: map[string]float64{"hs_s": 80}},
		{Scenario: "bridge-full", Target: "snigate-x25519", Round: 1, Values: map[string]float64{"hs_s": 120}},
		{Scenario: "bridge-full", Target: "haproxy", Round: 1, Values: map[string]float64{"hs_s": 90}},
		{Scenario: "bridge-full", Target: "nginx", Round: 1, Values: map[string]float64{"hs_s": 100}},
	})
	c := comparison{subjects: []string{"snigate", "snigate-x25519", "absent"}, base: "haproxy", refs: []string{"haproxy", "nginx"}}
	tests := []struct {
		rw   row
		want string
	}{
		{row{scenario: "splice-rate", key: "conn_s", higher: true}, "**no**"},
		{row{scenario: "splice-rate", key: "p99_ms"}, "**no**"},
		{row{scenario: "idle-mem", key: "kib_conn", limit: 8}, "**no** (≤ 8)"},
		{row{scenario: "idle-mem", key: "fds_conn", limit: 2}, "**no** (≤ 2)"},
		{row{scenario: "idle-mem", key: "fds_conn", limit: 2, format: "%.1f"}, "yes (≤ 2)"}, // noise below the shown precision
		{row{scenario: "bridge-resumed", key: "hs_s", higher: true}, "n/a"},
		{row{scenario: "bridge-full", key: "hs_s", higher: true}, "**no**"},
	}
	for _, tt := range tests {
		t.Run(tt.rw.scenario+"/"+tt.rw.key, func(t *testing.T) {
			if got := c.verdict(s, tt.rw, "snigate"); got != tt.want {
				t.Errorf("verdict = %q, want %q", got, tt.want)
			}
		})
	}
	if got := c.verdict(s, row{scenario: "bridge-full", key: "hs_s", higher: true}, "snigate-x25519"); got != "yes" {
		t.Errorf("verdict for snigate-x25519 = %q, want yes", got)
	}
	var b bytes.Buffer
	writeTable(&b, s, c)
	for _, want := range []string{
		"| metric | snigate | haproxy | nginx | snigate-x25519 | snigate / best of haproxy, nginx | met (snigate) | snigate-x25519 / best of haproxy, nginx | met (snigate-x25519) |",
		"| 1 splice conn/s | 100 (1.11×) | 90 | 110 (1.22×) | — | 0.91× (nginx) | **no** | n/a | n/a |",
		"| 3 bridge full hs/s | 80 (0.89×) | 90 | 100 (1.11×) | 120 (1.33×) | 0.80× (nginx) | **no** | 1.20× (nginx) | yes |",
	} {
		if !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("table line missing: %s\ngot:\n%s", want, b.String())
		}
	}
}

func TestProfileName(t *testing.T) {
	tests := []struct {
		target, want string
	}{
		{"snigate", "bridge-full-r2"},
		{"snigate-x25519", "bridge-full-r2-snigate-x25519"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			if got := profileName(Result{Scenario: "bridge-full", Target: tt.target, Round: 2}); got != tt.want {
				t.Errorf("profileName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProcReadsThisProcess(t *testing.T) {
	pid := os.Getpid()
	if rss := rssKiB([]int{pid}); rss <= 0 {
		t.Errorf("rssKiB = %d, want > 0", rss)
	}
	if fds := countFDs([]int{pid}); fds.Total < 3 {
		t.Errorf("countFDs = %+v, want at least stdin, stdout, stderr", fds)
	}
	if tree := processTree(pid); len(tree) == 0 || tree[0] != pid {
		t.Errorf("processTree = %v, want it to start with %d", tree, pid)
	}
}

// TestOpenLoop: an open loop starts exactly rate x d operations whatever
// they return, and counts failures apart.
func TestOpenLoop(t *testing.T) {
	var n atomic.Int64
	newOp := func() func() error {
		return func() error {
			if n.Add(1)%4 == 0 {
				return errBadEcho
			}
			return nil
		}
	}
	lr := openLoop(200, 100*time.Millisecond, newOp)
	if lr.ok+lr.errs != 20 || lr.errs != 5 || len(lr.lat.all) != 15 {
		t.Fatalf("ok %d, errs %d, latencies %d; want 20 started (200/s for 100ms), 5 failed, 15 timed", lr.ok, lr.errs, len(lr.lat.all))
	}
	if lr.firstErr != errBadEcho {
		t.Errorf("first error %v", lr.firstErr)
	}
}
