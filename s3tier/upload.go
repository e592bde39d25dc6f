package s3tier

import (
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/snigate/snigate/httpcache"
)

// upload is the copy of a registry fill into the bucket, under the
// digest's own key: a PUT of unknown length (multipart beyond PartSize)
// whose body ends (io.EOF, so S3 completes it) only once the fill's bytes
// matched the digest; any other end fails the body, and minio aborts the
// upload, so no object is ever visible under a digest's key but its
// content. Chunks wait in a queue of uploadQueue; an upload that cannot
// take one within UploadStall is abandoned, so the bucket never slows a
// pull.
type upload struct {
	t     *Tier
	d     digest
	ch    chan []byte
	stop  chan struct{} // closed by abort
	once  sync.Once
	err   error // why it was aborted
	cur   []byte
	sent  int64
	ended bool // finish or abort was called
	done  bool // finish was called: abort is too late
}

// uploadQueue is the chunks an upload holds before the bucket takes them.
const uploadQueue = 64

var errAbandoned = errors.New("s3tier: upload abandoned")

// startUpload starts the PUT of d's content, fed by the returned
// upload's write; release runs when it is over (uploaded or not).
func (t *Tier) startUpload(d digest, contentType string, release func()) *upload {
	u := &upload{t: t, d: d, ch: make(chan []byte, uploadQueue), stop: make(chan struct{})}
	t.wg.Go(func() { u.run(contentType, release) })
	return u
}

func (u *upload) run(contentType string, release func()) {
	defer release()
	opts := minio.PutObjectOptions{ContentType: contentType, PartSize: u.t.cfg.PartSize,
		UserMetadata: map[string]string{metaDigest: u.d.String()}, DisableContentSha256: true}
	_, err := u.t.cl.PutObject(u.t.ctx, u.t.cfg.Bucket, u.t.objectKey(u.d), u, -1, opts)
	switch {
	case err == nil:
		u.t.m.bytesWritten(u.sent)
		u.t.cfg.Logger.Debug("stored in the shared cache tier", "route", u.t.cfg.Route, "digest", u.d.String(), "bytes", u.sent)
	case errors.Is(u.err, errMismatch):
		// the fill failed its digest check: nothing was stored, nothing to count
	default:
		u.t.failed("upload", u.d, fmt.Errorf("put %s: %w", u.t.objectKey(u.d), err))
	}
}

// Read is the PUT's body: the fill's chunks, io.EOF after finish.
func (u *upload) Read(p []byte) (int, error) {
	if len(u.cur) == 0 {
		select {
		case b, ok := <-u.ch:
			if !ok {
				return 0, io.EOF
			}
			u.cur = b
		case <-u.stop:
			return 0, u.err
		}
	}
	n := copy(p, u.cur)
	u.cur = u.cur[n:]
	u.sent += int64(n)
	return n, nil
}

// write queues a copy of p; an upload that stays full for UploadStall is
// abandoned.
func (u *upload) write(p []byte) {
	if u.ended {
		return
	}
	b := append([]byte(nil), p...)
	timer := time.NewTimer(u.t.cfg.UploadStall)
	defer timer.Stop()
	select {
	case u.ch <- b:
	case <-u.stop:
	case <-timer.C:
		u.abort(fmt.Errorf("%w: the bucket took no bytes for %s", errAbandoned, u.t.cfg.UploadStall))
	}
}

// finish ends the body: the digest matched, S3 may complete the object.
func (u *upload) finish() {
	if !u.ended {
		u.ended, u.done = true, true
		close(u.ch)
	}
}

// abort fails the body: the PUT is abandoned and nothing is stored.
func (u *upload) abort(err error) {
	if u.done {
		return
	}
	u.ended = true
	u.once.Do(func() { u.err = err; close(u.stop) })
}

// errMismatch is a fill whose bytes did not match the digest.
var errMismatch = errors.New("s3tier: fill does not match its digest")

// teeBody is a registry fill's body, copied into an upload as the fill
// reads it, and checked against the digest before the upload may end.
type teeBody struct {
	body io.ReadCloser
	h    hash.Hash
	d    digest
	up   *upload
}

func (t *Tier) tee(f httpcache.Fetched, d digest, up *upload) httpcache.Fetched {
	f.Body = &teeBody{body: f.Body, h: d.newHash(), d: d, up: up}
	return f
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.h.Write(p[:n])
		b.up.write(p[:n])
	}
	switch {
	case errors.Is(err, io.EOF) && b.d.matches(b.h):
		b.up.finish()
	case errors.Is(err, io.EOF):
		b.up.abort(errMismatch)
	case err != nil:
		b.up.abort(err)
	}
	return n, err
}

// Close ends the fill's body; an upload not finished by then is aborted.
func (b *teeBody) Close() error {
	b.up.abort(errAbandoned)
	return b.body.Close()
}
