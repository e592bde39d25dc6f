package s3tier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
)

// A lease is the object PREFIX/leases/<algo>/<hex> that says "a gateway
// is fetching this digest from the registry": created with a conditional
// PUT (If-None-Match: *), so of the gateways that try at the same moment
// exactly one gets it; rewritten by its owner every third of LeaseTTL
// (If-Match its last ETag), so a live owner's lease keeps changing;
// deleted once the content is in the bucket or the fill failed. A gateway
// that finds it waits for the content; one that sees it unchanged for
// LeaseTTL by its own clock takes it over (If-Match the ETag it saw, so
// of several waiters one wins). Ages are measured by each waiter's own
// clock between its own observations, never by comparing two machines'
// clocks: skew does not matter.
type lease struct {
	t    *Tier
	d    digest
	etag string
	beat int
	stop chan struct{}
	lost atomic.Bool // a renewal was refused: the lease is another gateway's now
	// marker is the takeover marker this lease was won with ("" for a
	// lease created anew), removed with the lease.
	marker string
}

// leaseBody is a lease's content: for the log lines of the others.
type leaseBody struct {
	Owner  string `json:"owner"`
	Digest string `json:"digest"`
	Beat   int    `json:"beat"`
}

// errLeaseHeld is a lease another gateway holds.
var errLeaseHeld = errors.New("s3tier: lease held by another gateway")

// acquire creates d's lease, or with etag != "" takes over the lease
// whose ETag is etag. errLeaseHeld: another gateway was first.
func (t *Tier) acquire(ctx context.Context, d digest, etag string) (*lease, error) {
	l := &lease{t: t, d: d, stop: make(chan struct{})}
	if err := l.put(ctx, etag); err != nil {
		return nil, err
	}
	t.wg.Go(l.heartbeat)
	return l, nil
}

// put writes the lease: a create when etag is "", else a replacement of
// the lease whose ETag is etag.
func (l *lease) put(ctx context.Context, etag string) error {
	body, _ := json.Marshal(leaseBody{Owner: l.t.cfg.Owner, Digest: l.d.String(), Beat: l.beat})
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	if etag == "" {
		opts.SetMatchETagExcept("*")
	} else {
		opts.SetMatchETag(etag)
	}
	ctx, cancel := l.t.call(ctx)
	defer cancel()
	ui, err := l.t.cl.PutObject(ctx, l.t.cfg.Bucket, l.t.leaseKey(l.d), bytes.NewReader(body), int64(len(body)), opts)
	switch {
	case preconditionFailed(err) || (etag != "" && notFound(err)):
		return errLeaseHeld
	case err != nil:
		return fmt.Errorf("put lease %s: %w", l.t.leaseKey(l.d), err)
	}
	l.etag = ui.ETag
	return nil
}

// heartbeat rewrites the lease every third of LeaseTTL until release, or
// until it is lost (a renewal refused: another gateway took it over after
// renewals failed for LeaseTTL). A renewal that fails otherwise (the
// bucket slow or down) is tried again at the next beat, so one failure
// does not hand a live fill's lease to a waiter.
func (l *lease) heartbeat() {
	tick := time.NewTicker(l.t.cfg.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.t.ctx.Done():
			return
		case <-tick.C:
		}
		l.beat++
		err := l.put(l.t.ctx, l.etag)
		switch {
		case errors.Is(err, errLeaseHeld):
			l.lost.Store(true)
			l.t.failed("lease", l.d, errors.New("heartbeat: another gateway took the lease over"))
			return
		case err != nil:
			l.t.failed("lease", l.d, fmt.Errorf("heartbeat, tried again in %s: %w", l.t.cfg.LeaseTTL/3, err))
		}
	}
}

// release ends the lease: the content is in the bucket, or will not be.
// A lease lost to another gateway is that gateway's: it is left alone.
func (l *lease) release() {
	close(l.stop)
	if !l.lost.Load() {
		if err := l.t.remove(l.t.ctx, l.t.leaseKey(l.d)); err != nil {
			l.t.failed("lease", l.d, err)
		}
	}
	if l.marker != "" {
		if err := l.t.remove(l.t.ctx, l.marker); err != nil {
			l.t.failed("lease", l.d, err)
		}
	}
}

// leaseSeen is what a waiter last saw of a lease, by its own clock.
type leaseSeen struct {
	etag  string
	since time.Time
}

// errWaitTimeout is a wait on another gateway's lease past WaitTimeout.
var errWaitTimeout = errors.New("s3tier: waited too long for another gateway's fill")

// await waits on the lease of d held by another gateway, polling with
// backoff: it returns (nil, nil) when the content is in the bucket or the
// lease is gone (look again), a lease it took over from a dead owner, or
// errWaitTimeout after deadline.
func (t *Tier) await(ctx context.Context, d digest, deadline time.Time) (*lease, error) {
	var seen leaseSeen
	for delay := pollMin; ; delay = min(2*delay, pollMax) {
		if t.now().After(deadline) {
			return nil, errWaitTimeout
		}
		if _, ok, err := t.stat(ctx, d); err != nil || ok {
			return nil, err
		}
		l, again, err := t.checkLease(ctx, d, &seen)
		if l != nil || err != nil || again {
			return l, err
		}
		if err := t.pause(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// Backoff of a waiter's polls.
const (
	pollMin = 50 * time.Millisecond
	pollMax = time.Second
)

// checkLease looks at the lease once: gone (again), changed (the owner
// lives), or unchanged for LeaseTTL: taken over.
func (t *Tier) checkLease(ctx context.Context, d digest, seen *leaseSeen) (_ *lease, again bool, _ error) {
	etag, err := t.leaseETag(ctx, d)
	switch {
	case err != nil:
		return nil, false, err
	case etag == "":
		return nil, true, nil
	case etag != seen.etag:
		*seen = leaseSeen{etag: etag, since: t.now()}
		return nil, false, nil
	case t.now().Sub(seen.since) < t.cfg.LeaseTTL:
		return nil, false, nil
	}
	return t.takeOver(ctx, d, etag)
}

// takeOver takes over d's lease whose ETag is etag, unchanged for
// LeaseTTL: first the takeover marker of that ETag, created with
// If-None-Match: * (of several waiters exactly one creates it, also on
// stores whose PUT ignores If-Match, such as SeaweedFS), then the lease,
// If-Match etag. Lost to another waiter: (nil, again).
func (t *Tier) takeOver(ctx context.Context, d digest, etag string) (_ *lease, again bool, _ error) {
	marker := t.takeoverKey(d, etag)
	body, _ := json.Marshal(leaseBody{Owner: t.cfg.Owner, Digest: d.String()})
	opts := minio.PutObjectOptions{ContentType: "application/json"}
	opts.SetMatchETagExcept("*")
	cctx, cancel := t.call(ctx)
	_, err := t.cl.PutObject(cctx, t.cfg.Bucket, marker, bytes.NewReader(body), int64(len(body)), opts)
	cancel()
	switch {
	case preconditionFailed(err):
		return nil, true, nil // another waiter took it over first
	case err != nil:
		return nil, false, fmt.Errorf("put takeover marker %s: %w", marker, err)
	}
	// The marker may be new because a waiter that took this ETag over has
	// already finished and removed it, with the lease: on a store whose
	// conditional PUT does not refuse a missing object (SeaweedFS), the
	// If-Match below would then create a lease again and fetch a second
	// time. So the lease must still be the one seen.
	if now, err := t.leaseETag(ctx, d); err != nil || now != etag {
		if rerr := t.remove(ctx, marker); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err == nil, err
	}
	l, err := t.acquire(ctx, d, etag)
	if err != nil {
		if rerr := t.remove(ctx, marker); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if errors.Is(err, errLeaseHeld) {
			return nil, true, nil
		}
		return nil, false, err
	}
	l.marker = marker
	t.cfg.Logger.Info("took over the shared tier's fill of a gateway that stopped renewing its lease",
		"route", t.cfg.Route, "digest", d.String())
	return l, false, nil
}

// leaseETag is the ETag of d's lease, "" when there is none.
func (t *Tier) leaseETag(ctx context.Context, d digest) (string, error) {
	cctx, cancel := t.call(ctx)
	oi, err := t.cl.StatObject(cctx, t.cfg.Bucket, t.leaseKey(d), minio.StatObjectOptions{})
	cancel()
	switch {
	case notFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("stat lease %s: %w", t.leaseKey(d), err)
	}
	return oi.ETag, nil
}

// pause waits delay, or until ctx or the Tier ends.
func (t *Tier) pause(ctx context.Context, delay time.Duration) error {
	if t.pauseFunc != nil {
		return t.pauseFunc(ctx, delay)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ctx.Done():
		return errors.New("s3tier: closed")
	}
}
