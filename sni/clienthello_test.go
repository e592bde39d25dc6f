package sni

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// Hand-built ClientHellos, for the cases real clients never produce.

func u16(n int) []byte { return []byte{byte(n >> 8), byte(n)} }

func ext(typ int, body []byte) []byte { return append(append(u16(typ), u16(len(body))...), body...) }

func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, sniHostName)
		list = append(append(list, u16(len(n))...), n...)
	}
	return ext(extServerName, append(u16(len(list)), list...))
}

func alpnExt(protos ...string) []byte {
	var list []byte
	for _, p := range protos {
		list = append(append(list, byte(len(p))), p...)
	}
	return ext(extALPN, append(u16(len(list)), list...))
}

// buildHello returns one TLS record holding a ClientHello with exts.
func buildHello(exts ...[]byte) []byte {
	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...) // random
	body = append(body, 0)                   // session id
	body = append(body, 0, 2, 0x13, 0x01)    // one cipher suite
	body = append(body, 1, 0)                // null compression
	if exts != nil {
		all := bytes.Join(exts, nil)
		body = append(append(body, u16(len(all))...), all...)
	}
	msg := append([]byte{handshakeClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{recordTypeHandshake, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

// realHellos are ClientHellos captured from crypto/tls's client.
func realHellos(tb testing.TB) map[string][]byte {
	return map[string][]byte{
		"go default (X25519MLKEM768)": captureHello(tb, &tls.Config{ServerName: "registry.example.com", NextProtos: []string{"h2", "http/1.1"}}),
		"x25519 only":                 captureHello(tb, &tls.Config{ServerName: "registry.example.com", CurvePreferences: []tls.CurveID{tls.X25519}}),
		"no sni":                      captureHello(tb, &tls.Config{InsecureSkipVerify: true}),
		"many alpn (>4 KiB)":          captureHello(tb, &tls.Config{ServerName: "eu.registry.example.com", NextProtos: manyALPN(400)}),
		"session ticket (>4 KiB)":     ticketHello(tb, 5000),
	}
}

func TestReadClientHelloRealClients(t *testing.T) {
	for name, raw := range realHellos(t) {
		want := cryptoTLSView(raw)
		if !want.ok {
			t.Fatalf("%s: crypto/tls rejects its own ClientHello", name)
		}
		readers := map[string]func([]byte) io.Reader{
			"one read":          func(b []byte) io.Reader { return bytes.NewReader(b) },
			"one byte per read": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
			"half reads":        func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
			"data with EOF":     func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		}
		framings := map[string][]byte{
			"as sent":              raw,
			"records of 1000":      reframe(t, raw, 1000),
			"records of 7":         reframe(t, raw, 7),
			"header split (2 + n)": reframe(t, raw, 2),
		}
		for fname, framed := range framings {
			for rname, mk := range readers {
				t.Run(name+"/"+fname+"/"+rname, func(t *testing.T) {
					hello, got, err := ReadClientHello(mk(framed), nil)
					if err != nil {
						t.Fatalf("ReadClientHello: %v", err)
					}
					if !bytes.Equal(got, framed[:len(got)]) || len(got) == 0 {
						t.Fatalf("raw is not a prefix of the input")
					}
					if hello.ServerName != want.sni || !slices.Equal(hello.ALPN, want.alpn) {
						t.Errorf("got sni %q alpn %d, crypto/tls sees sni %q alpn %d", hello.ServerName, len(hello.ALPN), want.sni, len(want.alpn))
					}
				})
			}
		}
	}
}

func TestReadClientHelloLargeIsBiggerThan4KiB(t *testing.T) {
	// Regression guard for the trap this reader exists for: tcpproxy's
	// matcher reads one record through a 4 KiB buffer.
	for name, raw := range realHellos(t) {
		if !strings.Contains(name, ">4 KiB") {
			continue
		}
		hello, _, err := ReadClientHello(bytes.NewReader(raw), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if hello.Len <= 4096 {
			t.Errorf("%s: ClientHello is %d bytes, want > 4096 for this test to mean something", name, hello.Len)
		}
	}
}

func TestReadClientHelloKeepsBytesAfterHello(t *testing.T) {
	raw := buildHello(sniExt("a.example.com"))
	in := append(slices.Clone(raw), "early data"...)
	_, got, err := ReadClientHello(bytes.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, in[:len(got)]) || len(got) < len(raw) {
		t.Fatalf("raw = %q, want a prefix of the input covering the hello", got)
	}
}

func TestReadClientHelloTruncated(t *testing.T) {
	raw := captureHello(t, &tls.Config{ServerName: "registry.example.com", CurvePreferences: []tls.CurveID{tls.X25519}})
	for n := 0; n < len(raw); n++ {
		_, got, err := ReadClientHello(bytes.NewReader(raw[:n]), nil)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("prefix of %d bytes: err = %v, want io.ErrUnexpectedEOF", n, err)
		}
		if !bytes.Equal(got, raw[:n]) {
			t.Fatalf("prefix of %d bytes: raw = %d bytes", n, len(got))
		}
	}
}

func TestReadClientHelloErrors(t *testing.T) {
	big := []byte{recordTypeHandshake, 3, 1, 0x40, 0x00, handshakeClientHello, 0x01, 0x00, 0x01}
	tests := []struct {
		name    string
		in      []byte
		want    error
		errText string
	}{
		{name: "not tls", in: []byte("\x00\x01\x02\x03\x04\x05"), want: ErrNotTLS, errText: "not a TLS handshake record"},
		{name: "ssl2 style", in: []byte{0x80, 0x2e, 0x01, 0x03, 0x01}, want: ErrNotTLS},
		{name: "handshake type, wrong major", in: []byte{0x16, 0x02, 0x00, 0x00, 0x10}, want: ErrNotTLS},
		{name: "plain http", in: []byte("GET /v2/ HTTP/1.1\r\nHost: registry\r\n\r\n"), want: ErrNotTLS, errText: "plain HTTP"},
		{name: "http connect", in: []byte("CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n"), want: ErrNotTLS, errText: "CONNECT"},
		{name: "proxy v1 header", in: []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), want: errUnexpectedProxyHeader},
		{name: "proxy v2 header", in: []byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c"), want: errUnexpectedProxyHeader},
		{name: "record over 16 KiB", in: []byte{recordTypeHandshake, 3, 1, 0x40, 0x01}, want: ErrClientHelloTooLarge},
		{name: "message over 64 KiB", in: big, want: ErrClientHelloTooLarge},
		{name: "empty record", in: []byte{recordTypeHandshake, 3, 1, 0, 0}, want: errBadHello},
		{name: "not a ClientHello", in: []byte{recordTypeHandshake, 3, 1, 0, 4, 2, 0, 0, 0}, want: errBadHello},
		{name: "alert record mid-hello", in: append(reframe(t, buildHello(), 10)[:15], 0x15, 3, 1, 0, 2, 2, 40), want: errBadHello},
		{name: "duplicate extension", in: buildHello(sniExt("a.example"), sniExt("b.example")), want: errBadHello, errText: "twice"},
		{name: "two host names", in: buildHello(sniExt("a.example", "b.example")), want: errBadHello, errText: "server_name"},
		{name: "empty alpn name", in: buildHello(alpnExt("h2", "")), want: errBadHello},
		{name: "too many records", in: reframe(t, buildHello(sniExt(strings.Repeat("a", MaxClientHelloRecords))), 1), want: errBadHello, errText: "records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, raw, err := ReadClientHello(bytes.NewReader(tt.in), make([]byte, 0, 64))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.errText != "" && !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("err = %q, want it to mention %q", err, tt.errText)
			}
			if cap(raw) > helloBufferSize && tt.name != "too many records" {
				t.Errorf("buffer grew to %d bytes for a rejected hello", cap(raw))
			}
		})
	}
}

func TestReadClientHelloPlainHTTPDetail(t *testing.T) {
	_, _, err := ReadClientHello(strings.NewReader("CONNECT registry.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n"), nil)
	var pe *PlainHTTPError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *PlainHTTPError", err)
	}
	if pe.Method != "CONNECT" || pe.RequestLine != "CONNECT registry.example.com:443 HTTP/1.1" {
		t.Errorf("got %+v", pe)
	}
}

func TestReadClientHelloFields(t *testing.T) {
	hello, _, err := ReadClientHello(bytes.NewReader(captureHello(t, &tls.Config{ServerName: "Registry.Example.COM", NextProtos: []string{"h2", "http/1.1"}})), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hello.ServerName != "Registry.Example.COM" || !slices.Equal(hello.ALPN, []string{"h2", "http/1.1"}) {
		t.Errorf("sni %q alpn %q", hello.ServerName, hello.ALPN)
	}
	if !hello.SupportsTLS13() || hello.RecordVersion != tls.VersionTLS10 || hello.Version != tls.VersionTLS12 {
		t.Errorf("versions: record %#x legacy %#x supported %x", hello.RecordVersion, hello.Version, hello.SupportedVersions)
	}
	if hello.CipherSuites == 0 || hello.SessionIDLen != 32 || hello.Records != 1 {
		t.Errorf("fields: %+v", hello)
	}
	noExt, _, err := ReadClientHello(bytes.NewReader(buildHello()), nil)
	if err != nil || noExt.ServerName != "" || noExt.ALPN != nil {
		t.Errorf("hello without extensions: %+v, %v", noExt, err)
	}
}

// tlsView is what crypto/tls's server sees in a ClientHello.
type tlsView struct {
	ok   bool
	sni  string
	alpn []string
}

// replayConn feeds fixed bytes to a tls.Server and swallows its writes.
type replayConn struct {
	recConn
	r io.Reader
}

func (c *replayConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *replayConn) Write(p []byte) (int, error) { return len(p), nil }

// cryptoTLSView runs crypto/tls's server over raw and reports whether it
// got as far as GetConfigForClient, and what it saw there.
func cryptoTLSView(raw []byte) tlsView {
	var v tlsView
	stop := errors.New("stop")
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		v = tlsView{ok: true, sni: h.ServerName, alpn: slices.Clone(h.SupportedProtos)}
		return nil, stop
	}}
	_ = tls.Server(&replayConn{r: bytes.NewReader(raw)}, cfg).Handshake()
	return v
}

func FuzzReadClientHello(f *testing.F) {
	for _, raw := range realHellos(f) {
		f.Add(raw)
		f.Add(reframe(f, raw, 100))
		f.Add(raw[:len(raw)/2])
	}
	f.Add(buildHello(sniExt("a.example"), alpnExt("h2")))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{recordTypeHandshake, 3, 1, 0x40, 0x00, handshakeClientHello, 0x01, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, in []byte) {
		hello, raw, err := ReadClientHello(bytes.NewReader(in), nil)
		if len(raw) > MaxClientHelloBytes || !bytes.Equal(raw, in[:len(raw)]) {
			t.Fatalf("raw is %d bytes, not a bounded prefix of the input", len(raw))
		}
		if err != nil {
			return
		}
		if hello.Len > MaxClientHelloMessage {
			t.Fatalf("accepted a %d-byte message", hello.Len)
		}
		want := cryptoTLSView(raw)
		if want.ok && (hello.ServerName != want.sni || !slices.Equal(hello.ALPN, want.alpn)) {
			t.Fatalf("sni %q alpn %q; crypto/tls: sni %q alpn %q", hello.ServerName, hello.ALPN, want.sni, want.alpn)
		}
	})
}

func BenchmarkReadClientHello(b *testing.B) {
	cases := map[string][]byte{
		"go-default": captureHello(b, &tls.Config{ServerName: "registry.example.com", NextProtos: []string{"h2", "http/1.1"}}),
		"large":      captureHello(b, &tls.Config{ServerName: "registry.example.com", NextProtos: manyALPN(400)}),
	}
	for name, raw := range cases {
		b.Run(name, func(b *testing.B) {
			r := bytes.NewReader(raw)
			var hello ClientHello
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				r.Reset(raw)
				bp := getHelloBuf()
				buf, err := readClientHello(r, (*bp)[:0], &hello)
				if err != nil {
					b.Fatal(err)
				}
				putHelloBuf(bp, buf)
			}
		})
	}
}

// TestWriteFuzzSeeds regenerates the committed corpus in
// testdata/fuzz/FuzzReadClientHello from real crypto/tls clients:
// SNI_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./sni
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("SNI_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set SNI_WRITE_FUZZ_SEEDS=1 to regenerate the seed corpus")
	}
	seeds := map[string][]byte{}
	for name, raw := range realHellos(t) {
		base := strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(name))
		base = strings.Trim(regexp.MustCompile(`-+`).ReplaceAllString(base, "-"), "-")
		seeds[base] = raw
		seeds[base+"-split-records"] = reframe(t, raw, 300)
		seeds[base+"-truncated"] = raw[:len(raw)*2/3]
	}
	seeds["oversized-message"] = []byte{recordTypeHandshake, 3, 1, 0x40, 0x00, handshakeClientHello, 0x01, 0x00, 0x01}
	seeds["oversized-record"] = []byte{recordTypeHandshake, 3, 1, 0x40, 0x01}
	seeds["plain-http"] = []byte("GET /v2/ HTTP/1.1\r\nHost: registry.example.com\r\n\r\n")
	seeds["http-connect"] = []byte("CONNECT registry.example.com:443 HTTP/1.1\r\n\r\n")
	writeSeeds(t, "FuzzReadClientHello", seeds)
	proxySeeds := map[string][]byte{
		"unknown":  []byte("PROXY UNKNOWN\r\n"),
		"bad-port": []byte("PROXY TCP4 1.1.1.1 2.2.2.2 99999 1\r\n"),
	}
	for _, v := range []string{ProxyProtocolV1, ProxyProtocolV2} {
		b, err := formatProxyHeader(v, tcpAddr("203.0.113.7:5555"), tcpAddr("192.0.2.10:443"))
		if err != nil {
			t.Fatal(err)
		}
		proxySeeds[v+"-then-hello"] = append(b, realHellos(t)["x25519 only"]...)
		proxySeeds[v+"-truncated"] = b[:len(b)-1]
	}
	writeSeeds(t, "FuzzReadProxyHeader", proxySeeds)
}

// writeSeeds writes a committed seed corpus for one fuzz target.
func writeSeeds(t *testing.T, target string, seeds map[string][]byte) {
	dir := filepath.Join("testdata", "fuzz", target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds {
		data := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadClientHelloKeepsTrailingDot: a server name ending in a dot is
// read as sent (it was refused as malformed): the router ignores the dot,
// and a bridge route refuses it with a reason (match.go).
func TestReadClientHelloKeepsTrailingDot(t *testing.T) {
	hello, _, err := ReadClientHello(bytes.NewReader(buildHello(sniExt("a.example."))), nil)
	if err != nil || hello.ServerName != "a.example." {
		t.Errorf("got sni %q, %v; want \"a.example.\"", hello.ServerName, err)
	}
}
