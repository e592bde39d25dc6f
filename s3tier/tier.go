package s3tier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Tier is one route's shared tier: a bucket and prefix, reached with a
// client of its own. New opens and starts nothing; Close waits for the
// uploads and lease heartbeats the Tier started.
type Tier struct {
	cfg Config
	cl  objects
	tr  *http.Transport
	m   routeMetrics
	now func() time.Time // the clock of lease ages (tests move it)
	// pauseFunc replaces a waiter's backoff pause (tests); nil: a timer.
	pauseFunc func(ctx context.Context, d time.Duration) error

	wg     sync.WaitGroup
	ctx    context.Context // ends at Close: uploads and heartbeats stop
	cancel context.CancelFunc

	warnMu   sync.Mutex
	lastWarn map[string]time.Time
	lastErr  string // the last failure, for Stats
}

// New returns the Tier of cfg: the endpoint parsed, the CA and the key
// files read (an error names what is wrong), no request sent.
func New(cfg Config) (*Tier, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	host, secure, _ := cfg.endpoint()
	tr, err := cfg.transport()
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	creds, err := newFileCreds(cfg.AccessKeyFile, cfg.SecretKeyFile)
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	cl, err := minio.New(host, &minio.Options{
		Creds: credentials.New(creds), Secure: secure, Transport: tr,
		Region: cfg.Region, BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	cfg.Metrics.InitRoute(cfg.Route)
	ctx, cancel := context.WithCancel(context.Background())
	t := &Tier{cfg: cfg, cl: minioObjects{cl}, tr: tr, m: cfg.Metrics.forRoute(cfg.Route), now: time.Now,
		ctx: ctx, cancel: cancel, lastWarn: map[string]time.Time{}}
	return t, nil
}

// Route is the route whose tier this is.
func (t *Tier) Route() string { return t.cfg.Route }

// Endpoint and Bucket say where the tier is (snigate ctl cache).
func (t *Tier) Endpoint() string { return t.cfg.Endpoint }

// Bucket is the tier's bucket.
func (t *Tier) Bucket() string { return t.cfg.Bucket }

// Close stops the uploads and heartbeats in flight (an upload stopped is
// aborted: nothing half-written becomes visible) and waits for them.
func (t *Tier) Close() error {
	t.cancel()
	t.wg.Wait()
	t.tr.CloseIdleConnections()
	return nil
}

// call is the context of one S3 call: ctx's values and cancellation with
// CallTimeout.
func (t *Tier) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.cfg.CallTimeout)
}

// stat reports whether the content of d is in the bucket: its size and
// metadata when it is, (false, nil) when it is not.
func (t *Tier) stat(ctx context.Context, d digest) (minio.ObjectInfo, bool, error) {
	ctx, cancel := t.call(ctx)
	defer cancel()
	oi, err := t.cl.StatObject(ctx, t.cfg.Bucket, t.objectKey(d), minio.StatObjectOptions{})
	switch {
	case notFound(err):
		return oi, false, nil
	case err != nil:
		return oi, false, fmt.Errorf("stat %s: %w", t.objectKey(d), err)
	}
	return oi, true, nil
}

// notFound reports whether err is S3's "no such key" (or bucket).
func notFound(err error) bool {
	if err == nil {
		return false
	}
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey"
}

// preconditionFailed reports whether err is a conditional write refused.
func preconditionFailed(err error) bool {
	if err == nil {
		return false
	}
	r := minio.ToErrorResponse(err)
	return r.StatusCode == http.StatusPreconditionFailed || r.Code == "PreconditionFailed" ||
		r.StatusCode == http.StatusConflict
}

// remove deletes key; a key already gone is not an error.
func (t *Tier) remove(ctx context.Context, key string) error {
	ctx, cancel := t.call(ctx)
	defer cancel()
	if err := t.cl.RemoveObject(ctx, t.cfg.Bucket, key, minio.RemoveObjectOptions{}); err != nil && !notFound(err) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// failed counts and logs (at most every warnEvery per reason) a failure
// of the tier: the caller goes on without it.
func (t *Tier) failed(reason string, d digest, err error) {
	t.m.requests(resultError)
	now := time.Now()
	t.warnMu.Lock()
	t.lastErr = reason + ": " + err.Error()
	last, seen := t.lastWarn[reason]
	due := !seen || now.Sub(last) >= warnEvery
	if due {
		t.lastWarn[reason] = now
	}
	t.warnMu.Unlock()
	if due {
		t.cfg.Logger.Warn("shared cache tier failed; going on without it", "route", t.cfg.Route,
			"reason", reason, "digest", d.String(), "err", err)
	}
}

// warnEvery is the least time between two log lines of one reason.
const warnEvery = 10 * time.Second

// errCorrupt is an object whose bytes do not match its digest.
var errCorrupt = errors.New("s3tier: object does not match its digest")
