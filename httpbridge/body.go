package httpbridge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// DefaultChunkedPreread is how much of a chunked HTTP/1.1 request body is
// read, and its framing checked, before the request is sent upstream. A
// body that ends within it is forwarded whole with a Content-Length, so
// malformed framing gets 400 and the registry never sees the request; a
// longer body streams (a blob upload of any size costs no more than this)
// and malformed framing past it aborts the upstream request and gets 400.
const DefaultChunkedPreread = 32 << 10

// errNodeBody marks a failure reading the node's request body: the
// node's fault (malformed chunked framing, the node leaving mid-body),
// answered 400, never 502.
var errNodeBody = errors.New("reading the request body from the node")

// prereadBody reads the start of a chunked HTTP/1.1 request body, and
// the whole of one no longer than DefaultChunkedPreread, replacing
// r.Body with what was read followed by the rest. Every other body is
// left as it is, watched so that a failed read is the node's error (an
// HTTP/2 body's framing is the HTTP/2 server's to check).
func prereadBody(r *http.Request, ann *oci.Annotation) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ProtoMajor != 1 || len(r.TransferEncoding) == 0 {
		r.Body = &nodeBody{ReadCloser: r.Body, ann: ann}
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, DefaultChunkedPreread+1))
	if err != nil {
		return fmt.Errorf("%w: %w", errNodeBody, err)
	}
	if len(data) <= DefaultChunkedPreread {
		_ = r.Body.Close()
		r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
		return nil
	}
	r.Body = &nodeBody{ReadCloser: readCloser{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}, ann: ann}
	return nil
}

// readCloser reads from Reader and closes Closer.
type readCloser struct {
	io.Reader
	io.Closer
}

// nodeBody records, in the request's annotation, the first failure reading
// the node's request body while it streams upstream.
type nodeBody struct {
	io.ReadCloser
	ann *oci.Annotation
}

func (b *nodeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.ann.FailBody(fmt.Errorf("%w: %w", errNodeBody, err))
	}
	return n, err
}
