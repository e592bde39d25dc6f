package httpbridge

import (
	"io"
	"sync"
)

// copyBufferSize is the buffer of each answer copied through one
// (HTTP/2 answers, streamed ones, writers without ReadFrom): with the
// servers' and the transport's own few KiB, what one request in flight
// costs, however large the blob.
const copyBufferSize = 32 << 10

// bufferPool recycles copy buffers. It pools array pointers, which a
// slice converts back to without allocating (a *[]byte would cost a
// small allocation on every Put).
type bufferPool struct{ p sync.Pool }

// copyBuffer is one pooled buffer.
type copyBuffer [copyBufferSize]byte

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*copyBuffer); ok {
		return v[:]
	}
	return new(copyBuffer)[:]
}

// Put takes back a buffer of Get; any other slice is left to the GC.
func (b *bufferPool) Put(buf []byte) {
	if len(buf) == copyBufferSize && cap(buf) == copyBufferSize {
		b.p.Put((*copyBuffer)(buf))
	}
}

// copyBuffers are the copy buffers of the bridge's bodies: the
// forwarder's, and those of a ReadFrom that cannot read into the node
// connection's own buffer.
var copyBuffers bufferPool

// copyThrough copies src to w through a pooled buffer: io.Copy without
// its allocation, and without src's WriterTo or w's ReaderFrom (the
// ReadFrom methods that fall back to it are w's).
func copyThrough(w io.Writer, src io.Reader) (int64, error) {
	buf := copyBuffers.Get()
	defer copyBuffers.Put(buf)
	var written int64
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			m, err := w.Write(buf[:n])
			written += int64(m)
			if err != nil {
				return written, err
			}
		}
		switch {
		case rerr == io.EOF:
			return written, nil
		case rerr != nil:
			return written, rerr
		}
	}
}

// source is a body being copied: it keeps the first error of its
// reads other than io.EOF, so that a copy's caller tells the upstream
// failing (a read) from the node gone (a write), and reads at most left
// bytes (math.MaxInt64: no bound).
type source struct {
	r    io.Reader
	left int64
	err  error
}

func (s *source) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}
