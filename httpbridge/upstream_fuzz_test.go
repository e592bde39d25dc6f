package httpbridge

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/snigate/snigate/upstream"
)

// FuzzHTTP1Answer: whatever an upstream answers to a GET on a pooled
// connection, the round trip returns (an answer or an error) without a
// panic, and the connection goes back to the pool only after a complete
// answer that did not end it: never one with bytes left over.
func FuzzHTTP1Answer(f *testing.F) {
	for _, seed := range []string{
		okAnswer,
		"HTTP/1.1 100 Continue\r\n\r\n" + okAnswer,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nTrailer: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nclose-delimited",
		okAnswer + "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil",
		"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nextra",
		"garbage",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		slots := newDialSlots(1)
		p := newUpPool(func() *dialSlots { return slots }, func(context.Context, string, *upstream.Host) (net.Conn, error) {
			gw, up := net.Pipe()
			go answerOnce(up, answer)
			return gw, nil
		})
		req, _ := http.NewRequest("GET", "https://127.0.0.1:1/v2/", nil)
		req.Host = registryName
		resp, err := p.roundTrip(req, nil, waitLimit)
		if err != nil {
			return
		}
		_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		if pooled := p.idleCount(req.URL.Host); pooled != 0 && (rerr != nil || resp.Close) {
			t.Fatalf("connection pooled after %v (Close %v)", rerr, resp.Close)
		}
		p.closeIdle()
	})
}

// answerOnce reads one request on c, writes answer, and closes c.
func answerOnce(c net.Conn, answer []byte) {
	defer c.Close()
	if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
		return
	}
	_, _ = c.Write(answer)
}
