package s3tier

import (
	"context"
	"errors"
	"time"

	"github.com/snigate/snigate/httpcache"
)

// fetchFunc is a local fill's fetch of d for the fleet: the bucket's
// content when it is there; else, under d's lease, the registry's
// (fetch), copied into the bucket as it arrives; else, while another
// gateway holds the lease, its content once it is in the bucket. Any
// failure of the bucket falls back to fetch: the tier never fails a
// pull.
func (t *Tier) fetchFunc(d digest, fetch httpcache.FetchFunc) httpcache.FetchFunc {
	return func(ctx context.Context) (httpcache.Fetched, error) {
		deadline := t.now().Add(t.cfg.WaitTimeout)
		for {
			f, l, err := t.lookOrLease(ctx, d, deadline)
			switch {
			case err != nil:
				return fetch(ctx)
			case l != nil && t.storedMeanwhile(ctx, d):
				l.release() // look again: the content is there
			case l != nil:
				return t.fillAsOwner(ctx, d, l, fetch)
			case f.Body != nil:
				return f, nil
			}
		}
	}
}

// lookOrLease is one round of the fleet's fetch: the bucket's content,
// or d's lease (acquired or taken over), or neither (look again); an
// error (counted and logged here) sends the fill to the registry without
// the tier.
func (t *Tier) lookOrLease(ctx context.Context, d digest, deadline time.Time) (httpcache.Fetched, *lease, error) {
	oi, ok, err := t.stat(ctx, d)
	if err != nil {
		t.failed("stat", d, err)
		return httpcache.Fetched{}, nil, err
	}
	if ok {
		f, err := t.open(ctx, d, oi)
		if err != nil && !errors.Is(err, errCorrupt) {
			t.failed("read", d, err)
		}
		return f, nil, err
	}
	l, err := t.acquire(ctx, d, "")
	if !errors.Is(err, errLeaseHeld) {
		if err != nil {
			t.failed("lease", d, err)
		}
		return httpcache.Fetched{}, l, err
	}
	l, err = t.await(ctx, d, deadline)
	if err != nil && !errors.Is(err, errWaitTimeout) {
		t.failed("lease", d, err)
	} else if err != nil {
		t.cfg.Logger.Warn("fetching from the registry: another gateway's fill of the shared tier took too long",
			"route", t.cfg.Route, "digest", d.String(), "wait", t.cfg.WaitTimeout)
	}
	return httpcache.Fetched{}, l, err
}

// storedMeanwhile reports whether d's content is in the bucket after all,
// looked at once more by a gateway that has just won d's lease: another
// gateway's fill may have ended (uploaded, its lease released) between
// this gateway's first look and its lease, and a fetch would be one too
// many. A failing look counts as not stored (the owner fetches).
func (t *Tier) storedMeanwhile(ctx context.Context, d digest) bool {
	_, ok, err := t.stat(ctx, d)
	return err == nil && ok
}

// fillAsOwner fetches d from the registry under lease l and uploads it
// as it arrives; the lease is released once the upload is over.
func (t *Tier) fillAsOwner(ctx context.Context, d digest, l *lease, fetch httpcache.FetchFunc) (httpcache.Fetched, error) {
	f, err := fetch(ctx)
	if err != nil || f.Body == nil {
		l.release()
		return f, err
	}
	up := t.startUpload(d, f.Header.Get("Content-Type"), l.release)
	return t.tee(f, d, up), nil
}
