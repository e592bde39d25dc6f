package httpbridge

import (
	"net/http"
	"sync"
)

// h2FramePayload is the most body bytes an HTTP/2 DATA frame to a node
// carries so that the frame, with its 9-byte header, fits in one TLS
// record (16 KiB of plaintext): one record and one write system call
// per frame. The HTTP/2 server cuts a handler's writes into frames of
// the node's SETTINGS_MAX_FRAME_SIZE (16 KiB by default), each of which
// would take two records, the second one 9 bytes long.
const h2FramePayload = 16<<10 - 9

// frameBuf is the body bytes gathered into one frame.
type frameBuf [h2FramePayload]byte

var framePool = sync.Pool{New: func() any { return new(frameBuf) }}

// h2Frames gathers an HTTP/2 response body into writes of h2FramePayload
// bytes, so that each becomes one DATA frame of one TLS record. What is
// left at the end goes out with the handler's end (the server sends it
// with END_STREAM), or at a Flush.
type h2Frames struct {
	buf *frameBuf // nil until the first write
	n   int       // bytes of buf gathered
}

// write writes p through w in whole frames and keeps the rest; it
// returns the bytes of p taken (written or kept) and the first error of
// w, with sent the bytes w took.
func (f *h2Frames) write(w http.ResponseWriter, p []byte) (taken int, sent int64, err error) {
	for len(p) > 0 {
		if f.n == 0 && len(p) >= h2FramePayload { // a whole frame straight from p
			k, err := w.Write(p[:h2FramePayload])
			taken, sent = taken+k, sent+int64(k)
			if err != nil {
				return taken, sent, err
			}
			p = p[k:]
			continue
		}
		if f.buf == nil {
			f.buf = framePool.Get().(*frameBuf)
		}
		k := copy(f.buf[f.n:], p)
		f.n += k
		taken += k
		p = p[k:]
		if f.n == len(f.buf) {
			k, err := f.flush(w)
			if sent += k; err != nil {
				return taken, sent, err
			}
		}
	}
	return taken, sent, nil
}

// flush writes what is gathered; it returns the bytes w took.
func (f *h2Frames) flush(w http.ResponseWriter) (int64, error) {
	if f.n == 0 {
		return 0, nil
	}
	k, err := w.Write(f.buf[:f.n])
	f.n = 0
	return int64(k), err
}

// release returns the buffer to the pool, dropping what is gathered.
func (f *h2Frames) release() {
	if f.buf != nil {
		framePool.Put(f.buf)
		f.buf, f.n = nil, 0
	}
}
