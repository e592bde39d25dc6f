package sni

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Limits that bound what ReadClientHello buffers. A plaintext TLS record
// carries at most 2^14 bytes (RFC 8446 section 5.1); the ClientHello message
// may span several records. crypto/tls accepts handshake messages up to
// 64 KiB, which is far beyond anything a real client sends (a post-quantum
// key share with a session ticket and many ALPN values stays under 8 KiB).
const (
	recordHeaderLen    = 5
	maxPlaintextRecord = 1 << 14
	// MaxClientHelloMessage is the largest ClientHello handshake message
	// accepted: the 4-byte handshake header plus a 64 KiB body.
	MaxClientHelloMessage = 4 + 1<<16
	// MaxClientHelloRecords is the most TLS records a ClientHello may span
	// (a client may legally send it a few bytes per record; this bounds the
	// record headers buffered alongside the message to 20 KiB).
	MaxClientHelloRecords = 4096
	// MaxClientHelloBytes bounds the bytes ReadClientHello reads and buffers.
	MaxClientHelloBytes = MaxClientHelloMessage + MaxClientHelloRecords*recordHeaderLen
	// helloBufferSize is the pooled starting buffer: a Go 1.26 ClientHello
	// with an X25519MLKEM768 key share is about 1.5 KiB, a browser's about
	// 1.8 KiB. Larger hellos grow the buffer to exactly what they need.
	helloBufferSize = 2048
)

const (
	recordTypeHandshake   = 0x16
	handshakeClientHello  = 1
	extServerName         = 0
	extALPN               = 16
	extSupportedVersions  = 43
	sniHostName           = 0
	maxNotTLSPreviewBytes = 512
)

// ClientHello is what snigate learns from a TLS ClientHello. Strings and
// slices are copies: they stay valid after the buffer is reused.
type ClientHello struct {
	RecordVersion     uint16   // version in the first record header; alerts use it
	Version           uint16   // legacy_version of the message
	Random            [32]byte // client random
	SessionIDLen      int      // legacy_session_id length (0..32)
	CipherSuites      int      // number of cipher suites offered
	ServerName        string   // SNI host_name; "" when the client sent none
	ALPN              []string // protocols offered, in the client's order; nil when none
	SupportedVersions []uint16 // supported_versions extension; nil when absent
	Len               int      // bytes of the handshake message, header included
	Records           int      // TLS records the message spanned

	versions [8]uint16 // backs SupportedVersions when it fits: no allocation
	suites   suiteSet  // the offered suites crypto/tls implements
	shares   keyShares // the groups of the key shares sent (keyshare.go)
}

var helloBufPool = sync.Pool{New: func() any { b := make([]byte, 0, helloBufferSize); return &b }}

// getHelloBuf returns an empty pooled buffer for ReadClientHello.
func getHelloBuf() *[]byte { return helloBufPool.Get().(*[]byte) }

// putHelloBuf returns b to the pool if it is still the pooled size. Call it
// only when nothing refers to the bytes any more.
func putHelloBuf(b *[]byte, used []byte) {
	if cap(used) != helloBufferSize {
		return // grown: let the large buffer go
	}
	*b = used[:0]
	helloBufPool.Put(b)
}

// ReadClientHello reads from r until one whole TLS ClientHello handshake
// message is buffered, record after record, and parses it. buf is the
// starting buffer (its contents are ignored; nil is fine); it grows as
// needed up to MaxClientHelloBytes. raw is every byte read from r — the
// ClientHello's records and anything the client sent after them — which
// the caller must replay to the upstream before copying further bytes.
//
// Errors: ErrNotTLS (a *PlainHTTPError when it is an HTTP request),
// ErrClientHelloTooLarge, a malformed or truncated message, or r's own
// error (a deadline) wrapped with how far the read got. r's deadline is the
// caller's business.
func ReadClientHello(r io.Reader, buf []byte) (hello *ClientHello, raw []byte, err error) {
	hello = new(ClientHello)
	raw, err = readClientHello(r, buf[:0], hello)
	if err != nil {
		return nil, raw, err
	}
	return hello, raw, nil
}

// helloReader accumulates the bytes of one connection's ClientHello.
type helloReader struct {
	r   io.Reader
	buf []byte
}

func readClientHello(r io.Reader, buf []byte, hello *ClientHello) ([]byte, error) {
	*hello = ClientHello{}
	h := helloReader{r: r, buf: buf}
	err := h.readFirstHeader(hello)
	if err == nil {
		err = h.readMessage(hello)
	}
	return h.buf, err
}

// fill reads until at least n bytes are buffered, reading as much as the
// buffer holds in each call. The buffer grows (doubling, up to n) only
// when it is full, so what a connection holds follows the bytes it sent,
// not the lengths it claims: a record header announcing 16 KiB costs
// nothing until the bytes arrive.
func (h *helloReader) fill(n int) error {
	for len(h.buf) < n {
		if len(h.buf) == cap(h.buf) {
			if cap(h.buf) >= MaxClientHelloBytes {
				return fmt.Errorf("%w: more than %d bytes", ErrClientHelloTooLarge, MaxClientHelloBytes)
			}
			h.grow(min(n, 2*cap(h.buf)))
		}
		m, err := h.r.Read(h.buf[len(h.buf):cap(h.buf)])
		h.buf = h.buf[:len(h.buf)+m]
		if err != nil && len(h.buf) < n {
			return err
		}
	}
	return nil
}

func (h *helloReader) grow(n int) {
	c := max(n, 2*cap(h.buf), helloBufferSize)
	c = min(c, MaxClientHelloBytes)
	nb := make([]byte, len(h.buf), c)
	copy(nb, h.buf)
	h.buf = nb
}

// readFirstHeader reads the first record header and decides whether the
// connection speaks TLS at all.
func (h *helloReader) readFirstHeader(hello *ClientHello) error {
	err := h.fill(recordHeaderLen)
	if looksLikeTLS(h.buf) {
		if err != nil {
			return incomplete(len(h.buf), recordHeaderLen, err)
		}
		hello.RecordVersion = uint16(h.buf[1])<<8 | uint16(h.buf[2])
		return nil
	}
	if len(h.buf) == 0 {
		return incomplete(0, recordHeaderLen, err)
	}
	return h.notTLS()
}

// looksLikeTLS reports whether b (possibly shorter than a record header)
// starts like a TLS handshake record: type 22, major version 3.
func looksLikeTLS(b []byte) bool {
	return len(b) > 0 && b[0] == recordTypeHandshake && (len(b) < 2 || b[1] == 3)
}

// incomplete wraps a read error with how much of the ClientHello arrived.
func incomplete(have, want int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if have == 0 {
		return fmt.Errorf("no ClientHello received: %w", err)
	}
	return fmt.Errorf("ClientHello incomplete: got %d bytes, need at least %d: %w", have, want, err)
}

// notTLS reads a little more from a connection that is not TLS, enough to
// recognise a PROXY header or an HTTP request line, and classifies it.
func (h *helloReader) notTLS() error {
	if isProxyHeaderStart(h.buf) {
		return errUnexpectedProxyHeader
	}
	if startsLikeHTTP(h.buf) {
		h.readLine()
		if e := sniffHTTP(h.buf); e != nil {
			return e
		}
	}
	n := min(len(h.buf), 8)
	return fmt.Errorf("%w: first bytes %q are not a TLS handshake record", ErrNotTLS, h.buf[:n])
}

// readLine reads until a line feed, maxNotTLSPreviewBytes, EOF or the
// deadline, whichever comes first; what arrived is enough to classify.
func (h *helloReader) readLine() {
	if cap(h.buf) < maxNotTLSPreviewBytes {
		h.grow(maxNotTLSPreviewBytes)
	}
	for len(h.buf) < maxNotTLSPreviewBytes && !containsLF(h.buf) {
		m, err := h.r.Read(h.buf[len(h.buf):maxNotTLSPreviewBytes])
		h.buf = h.buf[:len(h.buf)+m]
		if err != nil {
			return
		}
	}
}

func containsLF(b []byte) bool {
	for _, c := range b {
		if c == '\n' {
			return true
		}
	}
	return false
}

// recordHeader validates the record header at off and returns its length.
func (h *helloReader) recordHeader(off, rec int) (int, error) {
	hdr := h.buf[off : off+recordHeaderLen]
	if hdr[0] != recordTypeHandshake {
		return 0, fmt.Errorf("%w: record %d has type %d, want handshake (22) until the ClientHello is complete", errBadHello, rec+1, hdr[0])
	}
	if hdr[1] != 3 {
		return 0, fmt.Errorf("%w: record %d has version %#04x", errBadHello, rec+1, uint16(hdr[1])<<8|uint16(hdr[2]))
	}
	n := int(hdr[3])<<8 | int(hdr[4])
	if n > maxPlaintextRecord {
		return 0, fmt.Errorf("%w: TLS record of %d bytes exceeds the %d-byte limit", ErrClientHelloTooLarge, n, maxPlaintextRecord)
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: empty handshake record", errBadHello)
	}
	return n, nil
}

// messageState tracks the handshake message across records.
type messageState struct {
	hdr       [4]byte
	hdrLen    int
	collected int // message bytes seen so far, header included
	total     int // 4 + body length once the header is complete, else -1
}

// readMessage reads records until the whole ClientHello message is
// buffered. It stops at the message's last byte, even inside a record: the
// rest of that record is the upstream's business.
func (h *helloReader) readMessage(hello *ClientHello) error {
	st := messageState{total: -1}
	off := 0
	for rec := 0; ; rec++ {
		if rec == MaxClientHelloRecords {
			return fmt.Errorf("%w: ClientHello spread over more than %d records", errBadHello, MaxClientHelloRecords)
		}
		if err := h.fill(off + recordHeaderLen); err != nil {
			return incomplete(len(h.buf), off+recordHeaderLen, err)
		}
		n, err := h.recordHeader(off, rec)
		if err != nil {
			return err
		}
		pos, err := h.consume(&st, off+recordHeaderLen, n)
		if err != nil {
			return err
		}
		if st.total >= 0 && st.collected == st.total {
			hello.Records = rec + 1
			return hello.parse(h.message(st.total))
		}
		off = pos
	}
}

// consume takes the message bytes of one record of n payload bytes at pos
// and returns where the next record starts.
func (h *helloReader) consume(st *messageState, pos, n int) (int, error) {
	for n > 0 && (st.total < 0 || st.collected < st.total) {
		k := n
		if st.total < 0 {
			k = min(n, 4-st.hdrLen)
		} else {
			k = min(n, st.total-st.collected)
		}
		if err := h.fill(pos + k); err != nil {
			return 0, incomplete(len(h.buf), pos+k, err)
		}
		if st.total < 0 {
			st.hdrLen += copy(st.hdr[st.hdrLen:], h.buf[pos:pos+k])
		}
		pos, n, st.collected = pos+k, n-k, st.collected+k
		if st.total < 0 && st.hdrLen == 4 {
			if err := st.header(); err != nil {
				return 0, err
			}
		}
	}
	return pos + n, nil
}

// header validates the 4-byte handshake header once it is complete.
func (st *messageState) header() error {
	if st.hdr[0] != handshakeClientHello {
		return fmt.Errorf("%w: first handshake message has type %d, want ClientHello (1)", errBadHello, st.hdr[0])
	}
	n := 4 + (int(st.hdr[1])<<16 | int(st.hdr[2])<<8 | int(st.hdr[3]))
	if n > MaxClientHelloMessage {
		return fmt.Errorf("%w: ClientHello message of %d bytes exceeds the %d-byte limit", ErrClientHelloTooLarge, n, MaxClientHelloMessage)
	}
	st.total = n
	return nil
}

// message returns the handshake message of total bytes: a slice of the
// buffer when it sits in the first record (the common case), else a copy
// reassembled from the records' payloads.
func (h *helloReader) message(total int) []byte {
	first := int(h.buf[3])<<8 | int(h.buf[4])
	if first >= total {
		return h.buf[recordHeaderLen : recordHeaderLen+total]
	}
	msg := make([]byte, 0, total)
	for off := 0; len(msg) < total; {
		n := int(h.buf[off+3])<<8 | int(h.buf[off+4])
		k := min(n, total-len(msg))
		msg = append(msg, h.buf[off+recordHeaderLen:off+recordHeaderLen+k]...)
		off += recordHeaderLen + n
	}
	return msg
}

// SupportsTLS13 reports whether the client offered TLS 1.3.
func (hello *ClientHello) SupportsTLS13() bool {
	for _, v := range hello.SupportedVersions {
		if v == 0x0304 {
			return true
		}
	}
	return false
}

// String summarises the hello for debug logs.
func (hello *ClientHello) String() string {
	return fmt.Sprintf("ClientHello{sni=%q alpn=[%s] len=%d records=%d}", hello.ServerName, strings.Join(hello.ALPN, ","), hello.Len, hello.Records)
}
