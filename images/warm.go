package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"sync"

	"github.com/snigate/snigate/oci"
)

// DefaultParallel is how many blobs of an image Warm fetches at once
// (WarmOptions.Parallel's zero value).
const DefaultParallel = 3

// WarmOptions tune Warm.
type WarmOptions struct {
	// Platforms are the index entries fetched; empty: every platform.
	Platforms []Platform
	// Progress, when set, is called (one call at a time) as the image's
	// manifests are read and its blobs arrive.
	Progress func(Progress)
	// Parallel blobs fetched at once; 0: DefaultParallel.
	Parallel int
}

// Progress is a warm's state, as Progress reports it.
type Progress struct {
	Image      string `json:"image"`
	Route      string `json:"route"`
	Digest     string `json:"digest,omitempty"` // the image's manifest (or index), once read
	Layers     int    `json:"layers"`           // blobs to have: configs and layers
	LayersDone int    `json:"layers_done"`
	Bytes      int64  `json:"bytes"`
	BytesDone  int64  `json:"bytes_done"`
	Blob       string `json:"blob,omitempty"` // the blob whose arrival this reports, if any
	Error      string `json:"error,omitempty"`
}

// progressStep is how many bytes of a blob pass between Progress calls.
const progressStep = 1 << 20

// Warm fetches the image ref (all its platforms, or opts.Platforms) into
// rt's cache through rt's chain, blobs already held skipped, and returns
// what the cache then holds of it (Check's words). name is how the image
// is reported (the reference as asked).
func Warm(ctx context.Context, rt Route, name string, ref oci.Reference, opts WarmOptions) Status {
	st := Status{Image: name, Route: rt.Name}
	root, body, ct, err := fetchManifest(ctx, rt, ref.Repository, ref.Ref(), ref.Digest)
	if err != nil {
		return st.failed(err)
	}
	get := func(ctx context.Context, d Descriptor) ([]byte, string, error) {
		_, b, ct, err := fetchManifest(ctx, rt, ref.Repository, d.Digest, d.Digest)
		return b, ct, err
	}
	plan, err := walk(ctx, root, body, ct, get, opts.Platforms)
	if err != nil {
		return st.failed(err)
	}
	tr := &tracker{p: Progress{Image: name, Route: rt.Name, Digest: root.Digest, Layers: len(plan.Blobs), Bytes: plan.BlobBytes()}, report: opts.Progress}
	tr.send("")
	errs := fetchBlobs(ctx, rt, ref.Repository, plan.Blobs, tr, max(opts.Parallel, 0))
	st = check(rt, name, plan)
	if err := errors.Join(errs...); err != nil && !st.Complete {
		st.Error = err.Error()
	}
	return st
}

// fetchBlobs fetches the blobs rt's store does not hold, parallel at a
// time (0: DefaultParallel), and returns their errors.
func fetchBlobs(ctx context.Context, rt Route, repo string, blobs []Descriptor, tr *tracker, parallel int) []error {
	if parallel == 0 {
		parallel = DefaultParallel
	}
	todo := make(chan Descriptor)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(parallel, max(len(blobs), 1)) {
		wg.Go(func() {
			for b := range todo {
				if err := fetchBlob(ctx, rt, repo, b, tr); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, b := range blobs {
		if rt.Store.Holds(b.Digest) {
			tr.done(b, b.Size)
			continue
		}
		select {
		case todo <- b:
		case <-ctx.Done():
		}
	}
	close(todo)
	wg.Wait()
	return errs
}

// fetchBlob GETs blob b of repo through rt's chain, which fills the
// store, checking the bytes it passes against the digest.
func fetchBlob(ctx context.Context, rt Route, repo string, b Descriptor, tr *tracker) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := newHash(b.Digest)
	if err != nil {
		return err
	}
	r, err := rt.ownRequest(ctx, http.MethodGet, "/v2/"+repo+"/blobs/"+b.Digest)
	if err != nil {
		return err
	}
	cw := &countWriter{h: h, tr: tr, b: b}
	s := newSink(cw)
	err = rt.Fetch.ServeOwn(s, r)
	switch {
	case err != nil:
		return fmt.Errorf("blob %s: %w", b.Digest, err)
	case s.status != http.StatusOK:
		return fmt.Errorf("blob %s: the registry answered %d %s: %s", b.Digest, s.status, http.StatusText(s.status), bytes.TrimSpace(s.errMsg))
	case !matches(h, b.Digest):
		return fmt.Errorf("blob %s: the bytes received do not match it", b.Digest)
	}
	tr.done(b, b.Size-cw.n)
	return nil
}

// fetchManifest GETs /v2/<repo>/manifests/<ref> through rt's chain and
// returns its descriptor and bytes, checked against digest when it is
// set, else against the answer's Docker-Content-Digest.
func fetchManifest(ctx context.Context, rt Route, repo, ref, digest string) (Descriptor, []byte, string, error) {
	r, err := rt.ownRequest(ctx, http.MethodGet, "/v2/"+repo+"/manifests/"+ref)
	if err != nil {
		return Descriptor{}, nil, "", err
	}
	r.Header.Set("Accept", oci.ManifestAccept)
	buf := &limitedBuffer{max: MaxManifest}
	s := newSink(buf)
	err = rt.Fetch.ServeOwn(s, r)
	switch {
	case err != nil:
		return Descriptor{}, nil, "", fmt.Errorf("manifest %s:%s: %w", repo, ref, err)
	case s.status != http.StatusOK:
		return Descriptor{}, nil, "", fmt.Errorf("manifest %s:%s: the registry answered %d %s: %s", repo, ref, s.status, http.StatusText(s.status), bytes.TrimSpace(s.errMsg))
	case buf.over:
		return Descriptor{}, nil, "", fmt.Errorf("manifest %s:%s: larger than %d bytes", repo, ref, MaxManifest)
	}
	body := buf.Bytes()
	if digest == "" {
		digest = cmpOr(s.h.Get("Docker-Content-Digest"), sha256Digest(body))
	}
	if err := checkDigest(body, digest); err != nil {
		return Descriptor{}, nil, "", fmt.Errorf("manifest %s:%s: %w", repo, ref, err)
	}
	ct := s.h.Get("Content-Type")
	return Descriptor{MediaType: ct, Digest: digest, Size: int64(len(body))}, body, ct, nil
}

// limitedBuffer keeps up to max bytes; over is set beyond.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.over || b.Len()+len(p) > b.max {
		b.over = true
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// countWriter hashes a blob's bytes and reports them to the tracker.
type countWriter struct {
	h  hash.Hash
	tr *tracker
	b  Descriptor
	n  int64 // bytes reported so far
	un int64 // bytes not reported yet
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.un += int64(len(p))
	if w.un >= progressStep {
		w.tr.bytes(w.un)
		w.n, w.un = w.n+w.un, 0
	}
	return len(p), nil
}

var _ io.Writer = (*countWriter)(nil)

// tracker serialises a warm's Progress calls.
type tracker struct {
	mu     sync.Mutex
	p      Progress
	report func(Progress)
}

func (t *tracker) send(blob string) {
	if t.report == nil {
		return
	}
	p := t.p
	p.Blob = blob
	t.report(p)
}

// bytes reports n more bytes of a blob in flight.
func (t *tracker) bytes(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.BytesDone += n
	t.send("")
}

// done reports blob b complete, rest being its bytes not reported yet.
func (t *tracker) done(b Descriptor, rest int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.p.BytesDone += max(rest, 0)
	t.p.LayersDone++
	t.send(b.Digest)
}
