package s3tier

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snigate/snigate/httpcache"
)

// metaDigest is the user metadata key that names an object's digest
// (x-amz-meta-digest): an object whose metadata names another digest is
// foreign and is never read.
const metaDigest = "Digest"

// open returns the bucket's content of d, whose stat is oi, as a fill's
// answer: its body is verified against d as it is read, and a mismatch
// (or a length other than oi.Size) fails the read that would have ended
// it, removes the object and counts an error, so a corrupt or foreign
// object is never a complete answer. The body's context ends at Close.
func (t *Tier) open(ctx context.Context, d digest, oi minio.ObjectInfo) (httpcache.Fetched, error) {
	if got := oi.UserMetadata[metaDigest]; got != "" && got != d.String() {
		t.dropCorrupt(d, fmt.Errorf("%w: its metadata names %s", errCorrupt, got))
		return httpcache.Fetched{}, errCorrupt
	}
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	timer := time.AfterFunc(t.cfg.CallTimeout, cancel) // the answer's deadline; the body's reads are the fill's
	obj, err := t.cl.GetObject(bctx, t.cfg.Bucket, t.objectKey(d), minio.GetObjectOptions{})
	if !timer.Stop() && err != nil {
		err = fmt.Errorf("no answer within %s: %w", t.cfg.CallTimeout, err)
	}
	if err != nil {
		cancel()
		return httpcache.Fetched{}, fmt.Errorf("get %s: %w", t.objectKey(d), err)
	}
	h := http.Header{}
	if oi.ContentType != "" {
		h.Set("Content-Type", oi.ContentType)
	}
	h.Set("Docker-Content-Digest", d.String())
	body := &verifyingReader{t: t, d: d, r: obj, h: d.newHash(), size: oi.Size, close: func() error {
		defer cancel()
		return obj.Close()
	}}
	return httpcache.Fetched{Body: body, Header: h, Size: oi.Size, FromCache: true}, nil
}

// dropCorrupt removes the object of d that did not match it, counts and
// logs it: the next fill fetches d from the registry and replaces it.
func (t *Tier) dropCorrupt(d digest, err error) {
	if rerr := t.remove(t.ctx, t.objectKey(d)); rerr != nil {
		err = errors.Join(err, rerr)
	}
	t.failed("corrupt", d, err)
}

// verifyingReader is a shared object's body: hashed as read, counted,
// and ended by io.EOF only when every byte matched the digest.
type verifyingReader struct {
	t      *Tier
	d      digest
	r      io.Reader
	h      hash.Hash
	size   int64
	n      int64
	done   bool
	endErr error // what every read after the end returns
	close  func() error
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.done {
		return 0, v.endErr
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	v.t.m.bytesRead(int64(n))
	switch {
	case errors.Is(err, io.EOF):
		return n, v.end()
	case err != nil:
		v.t.failed("read", v.d, err)
		return n, fmt.Errorf("read %s from the shared tier: %w", v.d, err)
	case v.n > v.size:
		return n, v.end()
	}
	return n, nil
}

// end checks what was read: io.EOF when it is d's content, else the
// object is dropped and the read fails.
func (v *verifyingReader) end() error {
	v.done, v.endErr = true, io.EOF
	if v.n != v.size || !v.d.matches(v.h) {
		v.endErr = fmt.Errorf("%w: %s (%d bytes read, %d announced)", errCorrupt, v.d, v.n, v.size)
		v.t.dropCorrupt(v.d, v.endErr)
		return v.endErr
	}
	v.t.m.requests(resultHit)
	return io.EOF
}

func (v *verifyingReader) Close() error { return v.close() }
