package sni

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/snigate/snigate/names"
)

// connectRequestCases are request heads and what readConnectRequest makes of them.
var connectRequestCases = []struct {
	name   string
	in     string
	host   string
	port   int
	ip     bool
	method string
	status int    // of a *requestError; 0: none
	err    string // in the error
	rest   string // bytes after the head
}{
	{name: "curl", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost: registry.example.com:443\r\nUser-Agent: curl/8.14.1\r\nProxy-Connection: Keep-Alive\r\n\r\n",
		host: "registry.example.com", port: 443, method: "CONNECT"},
	{name: "Go http.Transport", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost: registry.example.com:443\r\nUser-Agent: Go-http-client/1.1\r\n\r\n",
		host: "registry.example.com", port: 443, method: "CONNECT"},
	{name: "HTTP/1.0, bytes after the head", in: "CONNECT A.Example.COM.:8443 HTTP/1.0\r\n\r\n\x16\x03\x01",
		host: "a.example.com", port: 8443, method: "CONNECT", rest: "\x16\x03\x01"},
	{name: "IPv4", in: "CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n", host: "10.0.0.1", port: 443, ip: true, method: "CONNECT"},
	{name: "IPv6", in: "CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", host: "2001:db8::1", port: 443, ip: true, method: "CONNECT"},
	{name: "other method", in: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", method: "GET"},
	{name: "IPv6 zone", in: "CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n", status: 400, err: "zone"},
	{name: "absolute URI", in: "CONNECT https://registry.example.com:443/ HTTP/1.1\r\n\r\n", status: 400, err: "not an authority"},
	{name: "userinfo", in: "CONNECT user@registry.example.com:443 HTTP/1.1\r\n\r\n", status: 400, err: "not an authority"},
	{name: "port 0", in: "CONNECT registry.example.com:0 HTTP/1.1\r\n\r\n", status: 400, err: "out of range"},
	{name: "port 65536", in: "CONNECT registry.example.com:65536 HTTP/1.1\r\n\r\n", status: 400, err: "out of range"},
	{name: "signed port", in: "CONNECT registry.example.com:+443 HTTP/1.1\r\n\r\n", status: 400, err: "not a number"},
	{name: "empty host", in: "CONNECT :443 HTTP/1.1\r\n\r\n", status: 400, err: "empty host"},
	{name: "host with a space escape", in: "CONNECT a%20b:443 HTTP/1.1\r\n\r\n", status: 400, err: "not a DNS name"},
	{name: "lower-case method is another method", in: "connect registry.example.com:443 HTTP/1.1\r\n\r\n", method: "connect"},
	{name: "tab in request line", in: "CONNECT\tregistry.example.com:443 HTTP/1.1\r\n\r\n", status: 400, err: "malformed request line"},
	{name: "HTTP/0.9 style", in: "CONNECT registry.example.com:443\r\n\r\n", status: 400, err: "malformed request line"},
	{name: "header without colon", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost registry\r\n\r\n", status: 400, err: "malformed header line"},
	{name: "space before colon", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost : x\r\n\r\n", status: 400, err: "malformed header line"},
	{name: "NUL in a value", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nX: a\x00b\r\n\r\n", status: 400, err: "control bytes"},
	{name: "bare CR in a value", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nX: a\r\r\n\r\n", status: 400, err: "control bytes"},
	{name: "two Host headers", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400, err: "Host header"},
	{name: "chunked", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400, err: "has no body"},
	{name: "Content-Length 0 is fine", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		host: "registry.example.com", port: 443, method: "CONNECT"},
	{name: "too many headers", in: "CONNECT registry.example.com:443 HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", 101) + "\r\n", status: 400, err: "header fields"},
	{name: "head too large", in: "CONNECT registry.example.com:443 HTTP/1.1\r\nX: " + strings.Repeat("y", MaxConnectRequestBytes), status: 400, err: "larger than"},
	{name: "TLS instead of HTTP", in: "\x16\x03\x01\x02\x00", status: 400, err: "TLS ClientHello"},
	{name: "PROXY header", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n", err: "PROXY protocol header"},
	{name: "truncated", in: "CONNECT registry.example.com:443 HTTP/1.1\r\n", err: "incomplete after 43 bytes"},
	{name: "nothing", in: "", err: "no request received"},
}

func TestReadConnectRequest(t *testing.T) {
	for _, tt := range connectRequestCases {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per read: the reader must not depend on segmentation.
			req, raw, n, err := readConnectRequest(iotest.OneByteReader(strings.NewReader(tt.in)), nil)
			var re *requestError
			if errors.As(err, &re) != (tt.status != 0) || (re != nil && re.Status != tt.status) {
				t.Fatalf("error %v, want status %d", err, tt.status)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != tt.method || req.Host != tt.host || req.Port != tt.port || req.IP != tt.ip {
				t.Errorf("got %+v", req)
			}
			// The head is complete before the rest is read: a byte-wise
			// reader returns exactly the head, a whole read also the rest.
			if got := string(raw[n:]); got != "" {
				t.Errorf("byte-wise read past the head: %q", got)
			}
			_, raw, n, _ = readConnectRequest(strings.NewReader(tt.in), nil)
			if got := string(raw[n:]); got != tt.rest {
				t.Errorf("rest %q, want %q", got, tt.rest)
			}
		})
	}
}

// TestReadConnectRequestKeepsBufferedBytes: bytes received before the
// request (a PROXY header's leftover) are part of it.
func TestReadConnectRequestKeepsBufferedBytes(t *testing.T) {
	buf := append(make([]byte, 0, 64), "CONNECT registry.exa"...)
	req, _, _, err := readConnectRequest(strings.NewReader("mple.com:443 HTTP/1.1\r\n\r\n"), buf)
	if err != nil || req.Host != registryName {
		t.Fatalf("%+v, %v", req, err)
	}
}

func FuzzReadConnectRequest(f *testing.F) {
	for _, s := range connectSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		req, raw, n, err := readConnectRequest(bytes.NewReader(in), nil)
		if len(raw) > MaxConnectRequestBytes || !bytes.Equal(raw, in[:len(raw)]) || n > len(raw) {
			t.Fatalf("raw is %d bytes (head %d), not a bounded prefix of the input", len(raw), n)
		}
		if err != nil || req.Method != http.MethodConnect {
			return // other methods get a 405, whatever their target
		}
		// Whatever CONNECT this parser accepts, net/http accepts the same way.
		hr, herr := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw[:n])))
		if herr != nil {
			t.Fatalf("accepted %q, which net/http rejects: %v", raw[:n], herr)
		}
		if hr.Method != req.Method || hr.RequestURI != req.Target {
			t.Fatalf("method %q target %q; net/http: %q %q", req.Method, req.Target, hr.Method, hr.RequestURI)
		}
		if req.Port < 1 || req.Port > 65535 || req.Host == "" {
			t.Fatalf("accepted host %q port %d", req.Host, req.Port)
		}
		if !req.IP && (!names.IsHost(req.Host) || names.Canonical(req.Host) != req.Host) {
			t.Fatalf("accepted host %q that is not a canonical DNS name", req.Host)
		}
	})
}

// connectSeeds are the seeds of FuzzReadConnectRequest: requests real
// clients send, and broken, oversized and hostile forms.
func connectSeeds(tb testing.TB) map[string][]byte {
	return map[string][]byte{
		"curl":            []byte("CONNECT registry.example.com:443 HTTP/1.1\r\nHost: registry.example.com:443\r\nUser-Agent: curl/8.14.1\r\nProxy-Connection: Keep-Alive\r\n\r\n"),
		"go-transport":    []byte("CONNECT registry.example.com:443 HTTP/1.1\r\nHost: registry.example.com:443\r\nUser-Agent: Go-http-client/1.1\r\n\r\n"),
		"http10-then-tls": []byte("CONNECT registry.example.com:443 HTTP/1.0\r\n\r\n\x16\x03\x01\x00\x05"),
		"ipv6":            []byte("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n"),
		"bare-lf":         []byte("CONNECT a.example:443 HTTP/1.1\nHost: a.example:443\n\n"),
		"get-absolute":    []byte("GET http://registry.example.com/v2/ HTTP/1.1\r\nHost: registry.example.com\r\n\r\n"),
		"folded":          []byte("CONNECT a.example:443 HTTP/1.1\r\nX: a\r\n b\r\n\r\n"),
		"chunked":         []byte("CONNECT a.example:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
		"two-hosts":       []byte("CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
		"truncated":       []byte("CONNECT registry.example.com:443 HTTP/1.1\r\nHost: regi"),
		"oversized":       append([]byte("CONNECT a.example:443 HTTP/1.1\r\nX: "), bytes.Repeat([]byte("y"), MaxConnectRequestBytes)...),
		"tls":             captureHello(tb, &tls.Config{ServerName: registryName}),
		"proxy-v1":        []byte("PROXY TCP4 203.0.113.7 192.0.2.10 5555 3128\r\nCONNECT a.example:443 HTTP/1.1\r\n\r\n"),
	}
}

// TestWriteConnectFuzzSeeds regenerates testdata/fuzz/FuzzReadConnectRequest:
// SNI_WRITE_FUZZ_SEEDS=1 go test -run TestWriteConnectFuzzSeeds ./sni
func TestWriteConnectFuzzSeeds(t *testing.T) {
	if os.Getenv("SNI_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("set SNI_WRITE_FUZZ_SEEDS=1 to regenerate the seed corpus")
	}
	writeSeeds(t, "FuzzReadConnectRequest", connectSeeds(t))
}
