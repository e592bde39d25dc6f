package httpbridge

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// rawRegistry is an HTTP/1.1 registry whose answers are written byte by
// byte by the test: each request (read with net/http's ReadRequest) is
// answered by answer, which writes what it likes on the connection and
// says whether the connection goes on.
type rawRegistry struct {
	addr   string
	ln     net.Listener
	answer func(c net.Conn, r *http.Request) bool

	heads chan string // each request's head as the registry read it (the first 64 waiting)

	*connLog // accepted, waitClosed
	wg       sync.WaitGroup
}

// okAnswer is a legitimate registry's answer.
const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"

func startRawRegistry(tb testing.TB, p *testPKI, answer func(c net.Conn, r *http.Request) bool) *rawRegistry {
	tb.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", p.upstreamTLS("http/1.1"))
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawRegistry{addr: ln.Addr().String(), ln: ln, answer: answer, heads: make(chan string, 64),
		connLog: &connLog{closed: map[net.Conn]chan struct{}{}}}
	r.wg.Add(1)
	go r.accept()
	tb.Cleanup(r.stop)
	return r
}

func (r *rawRegistry) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.state(c, http.StateNew)
		r.wg.Add(1)
		go r.serve(c)
	}
}

// serve answers the requests of c until answer or the client ends it.
func (r *rawRegistry) serve(c net.Conn) {
	defer r.wg.Done()
	defer r.state(c, http.StateClosed)
	defer c.Close()
	capture := &captureReader{r: c}
	br := bufio.NewReader(capture)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		select {
		case r.heads <- capture.take():
		default:
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if !r.answer(c, req) {
			return
		}
	}
}

// closeConn closes the i-th connection from the registry's side.
func (r *rawRegistry) closeConn(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.conns[i].Close()
}

func (r *rawRegistry) stop() {
	_ = r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// write writes s on c; false when it could not (the client left).
func write(c net.Conn, s string) bool {
	_, err := io.WriteString(c, s)
	return err == nil
}

// captureReader keeps what is read through it until take.
type captureReader struct {
	r   io.Reader
	buf []byte
}

func (c *captureReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

// take is what was read since the last take (a request without a body,
// not pipelined: its head).
func (c *captureReader) take() string {
	s := string(c.buf)
	c.buf = c.buf[:0]
	return s
}
