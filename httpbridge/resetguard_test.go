package httpbridge

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Attacker is a raw HTTP/2 client on one TLS connection to the gateway.
type h2Attacker struct {
	c   *tls.Conn
	bw  *bufio.Writer
	fr  *http2.Framer
	hdr []byte // the HPACK block of a GET of a manifest
}

func dialH2(t *testing.T, w *world) *h2Attacker {
	t.Helper()
	c, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(waitLimit)); err != nil { // a failure bound, never a wait
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", registryName}, {":path", "/v2/team/app/manifests/v1"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	a := &h2Attacker{c: c, bw: bufio.NewWriterSize(c, 16<<10), hdr: hb.Bytes()}
	a.fr = http2.NewFramer(a.bw, c)
	if _, err := io.WriteString(a.bw, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := a.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return a
}

// open sends a GET on stream id, reset at once when reset.
func (a *h2Attacker) open(id uint32, reset bool) error {
	if err := a.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: a.hdr, EndStream: true, EndHeaders: true}); err != nil {
		return err
	}
	if reset {
		return a.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	return nil
}

// readUntil reads frames until stop says so; it returns the GOAWAY seen,
// if any, and the error that ended the reading (nil when stop did).
func (a *h2Attacker) readUntil(stop func(http2.Frame) bool) (*http2.GoAwayFrame, error) {
	var goaway *http2.GoAwayFrame
	for {
		f, err := a.fr.ReadFrame()
		if err != nil {
			return goaway, err
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			goaway = g
		}
		if stop(f) {
			return goaway, nil
		}
	}
}

// TestH2RapidResetClosesTheConnection: a node opening streams and
// resetting each at once (CVE-2023-44487), a bounded flood, gets GOAWAY
// ENHANCE_YOUR_CALM and its connection closed after a bounded number of
// resets; the registry sees a small fraction of the flood; the
// connection's end is the client's fault, counted and logged; a node on
// another connection still pulls.
func TestH2RapidResetClosesTheConnection(t *testing.T) {
	const flood = 5000
	p := newTestPKI(t)
	up, seen := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	a := dialH2(t, w)
	sent := make(chan int, 1)
	go func() {
		n := 0
		for ; n < flood; n++ {
			if a.open(uint32(2*n+1), true) != nil || n%64 == 63 && a.bw.Flush() != nil {
				break
			}
		}
		_ = a.bw.Flush()
		sent <- n
	}()
	goaway, err := a.readUntil(func(http2.Frame) bool { return false })
	if goaway == nil || goaway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("the flood ended with %v and GOAWAY %v, want GOAWAY ENHANCE_YOUR_CALM", err, goaway)
	}
	if !errors.Is(err, io.EOF) && !isConnReset(err) {
		t.Errorf("after the GOAWAY the connection ended with %v, want it closed", err)
	}
	_ = a.c.Close()
	n := <-sent
	t.Logf("flood: %d streams sent, %d requests reached the registry", n, len(seen.all()))
	w.logs.Wait(t, "node connection closed: HTTP/2 rapid reset", "resets=")
	w.logs.Wait(t, "HTTP/2 rapid reset", "client failed")
	if got := testutil.ToFloat64(w.m.floods.WithLabelValues("registry")); got != 1 {
		t.Errorf("snigate_http_h2_reset_floods_total = %v, want 1", got)
	}
	if got := len(seen.all()); got > 2*DefaultResetFloodMin {
		t.Errorf("the registry saw %d requests of a flood of %d streams, want at most %d", got, n, 2*DefaultResetFloodMin)
	}
	if goaway != nil && goaway.LastStreamID > 2*(DefaultResetFloodMin+DefaultMaxConcurrentStreams)+1 {
		t.Errorf("GOAWAY's last stream %d: the server processed more than %d streams", goaway.LastStreamID, DefaultResetFloodMin+DefaultMaxConcurrentStreams)
	}
	if resp, body := do(t, w.node(t, "h2"), "GET", "/v2/team/app/manifests/v1", nil); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("a node on another connection: %d %q", resp.StatusCode, body)
	}
}

// TestH2FewResetsKeepTheConnection: a node cancelling fewer streams than
// DefaultResetFloodMin, or a minority of its streams, keeps its
// connection: its next request is answered on it.
func TestH2FewResetsKeepTheConnection(t *testing.T) {
	tests := []struct {
		name          string
		streams, each int // streams opened; every each-th is reset, all of them when 0
	}{
		{name: "all reset, below the minimum", streams: DefaultResetFloodMin - 1, each: 0},
		{name: "a third reset, beyond the minimum", streams: 3 * DefaultResetFloodMin, each: 3},
		{name: "half reset, beyond the minimum", streams: 4 * DefaultResetFloodMin, each: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestPKI(t)
			up, _ := echoUpstream(t, p)
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
			a := dialH2(t, w)
			id := uint32(1)
			for i := 0; i < tt.streams; i++ {
				reset := tt.each == 0 || i%tt.each == tt.each-1
				if !reset { // one at a time, answered before the next
					if err := a.open(id, false); err != nil || a.bw.Flush() != nil {
						t.Fatal(err)
					}
					waitStreamEnd(t, a, id)
				} else if err := a.open(id, true); err != nil {
					t.Fatal(err)
				}
				id += 2
			}
			if err := a.open(id, false); err != nil || a.bw.Flush() != nil {
				t.Fatalf("sending the last request: %v", err)
			}
			waitStreamEnd(t, a, id)
		})
	}
}

// waitStreamEnd reads frames until stream id ends, failing on a GOAWAY
// or the connection's end.
func waitStreamEnd(t *testing.T, a *h2Attacker, id uint32) {
	t.Helper()
	goaway, err := a.readUntil(func(f http2.Frame) bool {
		_, isGoAway := f.(*http2.GoAwayFrame)
		return isGoAway || f.Header().StreamID == id && f.Header().Flags.Has(http2.FlagDataEndStream)
	})
	if err != nil || goaway != nil {
		t.Fatalf("stream %d: connection ended (%v, GOAWAY %v), want its answer", id, err, goaway)
	}
}

// isConnReset reports whether err is the connection closed under the
// reader (a reset), not the test's own deadline.
func isConnReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func TestResetGuardSplitReads(t *testing.T) {
	var tripped string
	g := newResetGuard(func(s string) { tripped = s })
	var buf bytes.Buffer
	buf.WriteString(http2.ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	_ = fr.WriteSettings()
	for id := uint32(1); id < 2*DefaultResetFloodMin+2; id += 2 {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte{0x82}, EndHeaders: true, EndStream: true})
		_ = fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}
	b := buf.Bytes()
	passed := 0
	for i := 0; i < len(b) && tripped == ""; i += 7 { // reads of 7 bytes: headers split across reads
		end := min(i+7, len(b))
		passed += g.pass(b[i:end])
	}
	if tripped == "" {
		t.Fatal("the guard did not trip")
	}
	// the last frame passed whole is the RST_STREAM before the tripping one
	frameLen := 9 + 1 + 9 + 4 // HEADERS with a 1-byte block, RST_STREAM
	want := len(http2.ClientPreface) + 9 + (DefaultResetFloodMin-1)*frameLen + 9 + 1
	if passed < want || passed > want+8 {
		t.Errorf("passed %d bytes, want the bytes before the %dth RST_STREAM's header (%d, and what of it an earlier read held)", passed, DefaultResetFloodMin, want)
	}
	if g.pass([]byte{0}) != 0 {
		t.Error("bytes pass after the guard tripped")
	}
}
