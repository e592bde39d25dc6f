package sni

import (
	"bufio"
	"bytes"
	"net"
	"testing"

	"github.com/pires/go-proxyproto"
)

func TestFormatProxyHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		version  string
		src, dst net.Addr
		want     string
	}{
		{name: "v1 ipv4", version: ProxyProtocolV1, src: tcpAddr("203.0.113.7:5555"), dst: tcpAddr("192.0.2.10:443"), want: "PROXY TCP4 203.0.113.7 192.0.2.10 5555 443\r\n"},
		{name: "v1 ipv6", version: ProxyProtocolV1, src: tcpAddr("[2001:db8::7]:5555"), dst: tcpAddr("[2001:db8::10]:443")},
		{name: "v2 ipv4", version: ProxyProtocolV2, src: tcpAddr("203.0.113.7:5555"), dst: tcpAddr("192.0.2.10:443")},
		{name: "v2 mixed families", version: ProxyProtocolV2, src: tcpAddr("203.0.113.7:5555"), dst: tcpAddr("[2001:db8::10]:443")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := formatProxyHeader(tt.version, tt.src, tt.dst)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && string(b) != tt.want {
				t.Errorf("header %q, want %q", b, tt.want)
			}
			h, err := proxyproto.Read(bufio.NewReader(bytes.NewReader(b)))
			if err != nil {
				t.Fatal(err)
			}
			src, _ := proxySource(h)
			want, _ := addrOf(tt.src)
			if got, _ := addrOf(src); got != want {
				t.Errorf("source %v, want %v", src, tt.src)
			}
		})
	}
}

func tcpAddr(s string) *net.TCPAddr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestIsProxyHeaderStart(t *testing.T) {
	for in, want := range map[string]bool{
		"PROXY TCP4 ":             true,
		"\r\n\r\n\x00\r\nQUIT\n!": true,
		"PROX":                    false,
		"\x16\x03\x01\x02\x00":    false,
		"GET / HTTP/1.1":          false,
	} {
		if got := isProxyHeaderStart([]byte(in)); got != want {
			t.Errorf("isProxyHeaderStart(%q) = %v", in, got)
		}
	}
}

func FuzzReadProxyHeader(f *testing.F) {
	for _, v := range []string{ProxyProtocolV1, ProxyProtocolV2} {
		b, _ := formatProxyHeader(v, tcpAddr("203.0.113.7:5555"), tcpAddr("192.0.2.10:443"))
		f.Add(append(b, 0x16, 3, 1, 0, 5))
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add([]byte("PROXY TCP4 1.1.1.1 2.2.2.2 99999 1\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		h, rest, err := readProxyHeader(&replayConn{r: r})
		if err != nil {
			return
		}
		consumed := len(in) - r.Len()
		if len(rest) > consumed || !bytes.Equal(rest, in[consumed-len(rest):consumed]) {
			t.Fatalf("rest %q is not what followed the header in %q", rest, in)
		}
		if src, _ := proxySource(h); src != nil {
			_ = src.String()
			inPrefixes(nil, src)
		}
	})
}
