package httpbridge

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/snigate/snigate/internal/memregistry"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/oci"
)

// floodRequests bounds each flood of these tests.
const floodRequests = 2000

// auditBytes is the size of the audit log written so far.
func (a *memAudit) bytes() int {
	a.sink.mu.Lock()
	defer a.sink.mu.Unlock()
	return a.sink.buf.Len()
}

// h2Flooder is a raw HTTP/2 client on the gateway: one connection whose
// header compression table holds a long :authority, so that each request
// repeating it costs a byte or two on the wire.
type h2Flooder struct {
	conn  *tls.Conn
	fr    *http2.Framer
	hbuf  bytes.Buffer
	enc   *hpack.Encoder
	wire  *countingWriter
	next  uint32 // the next stream id
	ended int    // streams the server has ended
}

type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

func newH2Flooder(tb testing.TB, w *world) *h2Flooder {
	tb.Helper()
	c, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{"h2"}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		tb.Fatalf("negotiated %q, want h2", p)
	}
	f := &h2Flooder{conn: c, wire: &countingWriter{w: c}, next: 1}
	f.fr = http2.NewFramer(f.wire, c)
	f.enc = hpack.NewEncoder(&f.hbuf)
	if _, err := io.WriteString(f.wire, http2.ClientPreface); err != nil {
		tb.Fatal(err)
	}
	if err := f.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}); err != nil {
		tb.Fatal(err)
	}
	if err := f.fr.WriteWindowUpdate(0, 1<<30); err != nil {
		tb.Fatal(err)
	}
	return f
}

// get sends a GET for path with authority, its headers compressed
// against the connection's table.
func (f *h2Flooder) get(tb testing.TB, authority, path string) {
	tb.Helper()
	f.hbuf.Reset()
	for _, h := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", authority}, {":path", path}} {
		_ = f.enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.next, BlockFragment: f.hbuf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		tb.Fatal(err)
	}
	f.next += 2
}

// await reads the server's frames until n more streams have ended.
func (f *h2Flooder) await(tb testing.TB, n int) {
	tb.Helper()
	for want := f.ended + n; f.ended < want; {
		fr, err := f.fr.ReadFrame()
		if err != nil {
			tb.Fatalf("after %d answers: %v", f.ended, err)
		}
		switch fr := fr.(type) {
		case *http2.SettingsFrame:
			if !fr.IsAck() {
				_ = f.fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			if fr.StreamEnded() {
				f.ended++
			}
		case *http2.DataFrame:
			if fr.StreamEnded() {
				f.ended++
			}
		case *http2.RSTStreamFrame:
			f.ended++
		case *http2.GoAwayFrame:
			tb.Fatalf("GOAWAY after %d answers: %v", f.ended, fr.ErrCode)
		}
	}
}

// TestAuditFloodBounded: a node repeating refused requests with a
// 4,000-byte :authority that HTTP/2 header compression sends once, and a
// node sending refused GETs with 8 KiB paths over HTTP/1.1 (the 403
// quotes the path), write a bounded audit
// log (the bug: every record held the whole value, 917 KB on the wire
// became 310 MB of audit log in 15 s), while a pull on another
// connection is audited in full, and the metrics count every refusal.
// (Refusals are aggregated per client: the gateway's own refusals of
// these repeated requests write a record, and one more per window.)
func TestAuditFloodBounded(t *testing.T) {
	p := newTestPKI(t)
	up, _, _ := newRegistry(t, p, "h2")
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Repositories: []string{"team/**"}}})

	h2Audit := floodH2Authority(t, w)
	floodH1LongPaths(t, w, h2Audit)
	for _, l := range w.audit.sink.lines() {
		if len(l)+1 > MaxAuditRecord {
			t.Fatalf("a record of %d bytes, want at most MaxAuditRecord = %d", len(l)+1, MaxAuditRecord)
		}
	}
	pullAuditedInFull(t, w)
}

// floodH2Authority sends floodRequests refused requests with a 4,000-byte
// :authority compressed once over one HTTP/2 connection; every refusal
// is counted, the audit log stays a few records. It returns the audit
// log's size after the flood.
func floodH2Authority(t *testing.T, w *world) int {
	t.Helper()
	flood := newH2Flooder(t, w)
	authority := strings.Repeat("a", 3990) + ".test"
	const batch = 50
	for sent := 0; sent < floodRequests; sent += batch {
		for range batch {
			flood.get(t, authority, "/v2/")
		}
		flood.await(t, batch)
	}
	h2Audit := w.audit.bytes()
	t.Logf("h2 flood: %d requests in %d bytes on the wire, %d bytes of audit log", floodRequests, flood.wire.n, h2Audit)
	if got := refusedTotal(t, w.m); got != floodRequests {
		t.Errorf("refused = %v, want every one of %d", got, floodRequests)
	}
	if h2Audit > 16*MaxAuditRecord {
		t.Errorf("%d refusals wrote %d bytes of audit log, want at most %d (a few aggregated records)", floodRequests, h2Audit, 16*MaxAuditRecord)
	}
	return h2Audit
}

// floodH1LongPaths sends floodRequests/2 refused GETs with 8 KiB paths
// over HTTP/1.1: each 403 is short (it does not echo the whole path),
// every refusal is counted, the audit log grows by a few records past
// h2Audit.
func floodH1LongPaths(t *testing.T, w *world, h2Audit int) {
	t.Helper()
	longPath := "/v2/" + strings.Repeat("x/", 4<<10) + "manifests/latest" // names no repository: 403
	h1 := w.node(t, "http/1.1")
	for range floodRequests / 2 {
		resp, err := h1.Get("https://" + registryName + longPath)
		if err != nil {
			t.Fatal(err)
		}
		drain(resp)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET with an 8 KiB path: %d, want 403", resp.StatusCode)
		}
		if resp.ContentLength > int64(MaxAuditError+truncMarkerMax+64) {
			t.Fatalf("the 403 body is %d bytes: the refusal echoes the whole path", resp.ContentLength)
		}
	}
	if got := refusedTotal(t, w.m); got != floodRequests+floodRequests/2 {
		t.Errorf("refused = %v, want every one of %d", got, floodRequests+floodRequests/2)
	}
	if h1Audit := w.audit.bytes() - h2Audit; h1Audit > 16*MaxAuditRecord {
		t.Errorf("%d refusals of 8 KiB paths wrote %d bytes of audit log, want at most %d", floodRequests/2, h1Audit, 16*MaxAuditRecord)
	}
}

// pullAuditedInFull pulls an image on another connection after the
// floods: its records (the manifest and two blobs) are all written, in
// full.
func pullAuditedInFull(t *testing.T, w *world) {
	t.Helper()
	before := len(w.audit.sink.lines())
	if _, err := memregistry.PullImage(context.Background(), name.MustParseReference(registryName+"/team/app:v1"), w.node(t, "h2").Transport); err != nil {
		t.Fatal(err)
	}
	// The records are written off the request path: wait for the pull's
	// (the manifest and two blobs), then check every one of them.
	testkit.Poll(t, "the pull's audit records", func() bool {
		var manifests, blobs int
		for _, l := range w.audit.sink.lines()[before:] {
			if strings.Contains(l, `"status":200`) {
				manifests += strings.Count(l, `"kind":"manifest"`)
				blobs += strings.Count(l, `"kind":"blob"`)
			}
		}
		return manifests >= 1 && blobs >= 2
	})
	checkPullAudited(t, w.audit.sink.lines()[before:])
}

// refusedTotal is snigate_http_refused_total of every reason.
func refusedTotal(tb testing.TB, m *Metrics) float64 {
	tb.Helper()
	n := 0.0
	for _, r := range refusalReasons {
		n += counter(tb, m.refused.WithLabelValues("registry", r))
	}
	return n
}

// checkPullAudited: the pull's records are all there, whole, 200 each.
func checkPullAudited(t *testing.T, lines []string) {
	t.Helper()
	kinds := map[oci.Kind]int{}
	for _, l := range lines {
		rec := parseAuditLine(t, l)
		if rec.Status == http.StatusMisdirectedRequest {
			continue // the flood's summary, at its window's end
		}
		if rec.Repository != "team/app" && rec.Kind != oci.KindBase || rec.Suppressed != 0 || strings.Contains(l, "truncated") {
			t.Errorf("pull record %s", l)
		}
		if rec.Status == http.StatusOK {
			kinds[rec.Kind]++
		}
	}
	if kinds[oci.KindManifest] < 1 || kinds[oci.KindBlob] < 2 {
		t.Errorf("pull records by kind %v, want the manifest and the config and layer blobs:\n%s", kinds, strings.Join(lines, "\n"))
	}
}

// TestOversizedRequestHeaders: a request line beyond
// DefaultMaxHeaderBytes gets 431 and no audit record (the bug: 1 MiB
// paths were read and audited whole).
func TestOversizedRequestHeaders(t *testing.T) {
	p := newTestPKI(t)
	up, _ := echoUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			resp, err := w.node(t, proto).Get("https://" + registryName + "/v2/" + strings.Repeat("x", DefaultMaxHeaderBytes+8<<10) + "/manifests/v1")
			if err == nil {
				drain(resp)
				if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
					t.Errorf("got %d, want 431", resp.StatusCode)
				}
			}
		})
	}
	resp, body := do(t, w.node(t, "http/1.1"), "GET", "/v2/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/: %d %s", resp.StatusCode, body)
	}
	if lines := w.audit.wait(t, 1); len(w.audit.sink.lines()) != 1 || lines[0].Kind != oci.KindBase {
		t.Errorf("audit %q, want only the GET /v2/", w.audit.sink.lines())
	}
}
