package certs

import (
	"bytes"
	"context"
	"time"

	"github.com/cloudflare/certinel/fswatcher"

	"github.com/snigate/snigate/internal/filewatch"
)

// Run follows the key pair's files until ctx is done, then returns nil once
// every goroutine it started has finished. Call it once.
//
// certinel's Sentinel.Start watches the certificate's directory and reloads
// on an event for the certificate path or a change of where it resolves to
// (the Kubernetes ..data swap). It has three gaps, and Run covers them:
//
//   - Start returns on the first failed load, for example a certificate
//     written before its key, or an in-place write caught half-way. Run
//     restarts it with exponential backoff (DefaultRetryMin doubling to
//     DefaultRetryMax) and serves the last good certificate meanwhile. A
//     restart is fswatcher.New, which loads at once, so nothing that changed
//     while no watch ran is missed.
//   - Start ignores the key path: a key rotated alone, or written after its
//     certificate, or kept in another directory, raises no reload. Run stats
//     both files every PollInterval and reloads when either changed. A poll
//     was chosen over a second fsnotify watch because it needs no extra
//     inotify instance per pair, also notices a watch that never got set up
//     (files changed between New and Start's Add), and two stat calls every
//     few seconds cost nothing; certinel's events still make the common case
//     (the certificate or ..data changes) immediate.
//   - Start tells no one it reloaded: every poll and every handshake compares
//     the certificate in use with the last one reported (see observe).
func (k *KeyPair) Run(ctx context.Context) error {
	sv := &supervisor{k: k, last: k.initial, backoff: backoff{min: DefaultRetryMin, max: DefaultRetryMax}}
	defer sv.stopWatch()
	sv.startWatch(ctx, k.sentinel.Load())
	tick := time.NewTicker(k.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-sv.done:
			sv.watchEnded(ctx, err)
		case <-sv.retryC():
			sv.retry = nil
			sv.attempt(ctx)
		case <-tick.C:
			sv.poll(ctx)
		}
	}
}

// supervisor is Run's state; only Run's goroutine touches it.
type supervisor struct {
	k       *KeyPair
	cancel  context.CancelFunc // stops the running Start; nil when none runs
	done    chan error         // Start's result; nil when none runs
	retry   *time.Timer        // pending reload attempt, or nil
	backoff backoff
	last    pairID // the files' identity at the last load attempt
}

// startWatch runs s.Start on its own goroutine.
func (sv *supervisor) startWatch(ctx context.Context, s *fswatcher.Sentinel) {
	ctx, sv.cancel = context.WithCancel(ctx)
	sv.done = make(chan error, 1)
	go runSentinel(ctx, s, sv.done)
}

func runSentinel(ctx context.Context, s *fswatcher.Sentinel, done chan<- error) {
	done <- s.Start(ctx)
}

// stopWatch stops the running Start, if any, and waits for it; it also drops
// a pending retry.
func (sv *supervisor) stopWatch() {
	if sv.cancel != nil {
		sv.cancel()
		<-sv.done
		sv.cancel, sv.done = nil, nil
	}
	if sv.retry != nil {
		sv.retry.Stop()
		sv.retry = nil
	}
}

// watchEnded handles Start's return: a failed load or a broken watch.
func (sv *supervisor) watchEnded(ctx context.Context, err error) {
	sv.cancel()
	sv.cancel, sv.done = nil, nil
	if ctx.Err() != nil {
		return
	}
	sv.k.failed(sv.k.watchError(err))
	sv.scheduleRetry()
}

// poll is the backstop: report what certinel reloaded, reset the backoff
// once a watch has survived a whole interval, and reload if a file changed.
func (sv *supervisor) poll(ctx context.Context) {
	sv.k.observe()
	if sv.done != nil && sv.retry == nil {
		sv.backoff.reset()
	}
	if statPair(sv.k.cfg.CertFile, sv.k.cfg.KeyFile) != sv.last {
		sv.attempt(ctx)
	}
}

// attempt loads the pair afresh. On success the new Sentinel is served and
// watched; on failure the last good one stays and a retry is scheduled.
func (sv *supervisor) attempt(ctx context.Context) {
	k := sv.k
	sv.last = statPair(k.cfg.CertFile, k.cfg.KeyFile)
	s, err := fswatcher.New(k.cfg.CertFile, k.cfg.KeyFile)
	if err != nil {
		k.failed(k.loadError(err))
		sv.scheduleRetry()
		return
	}
	if sv.retry != nil {
		sv.retry.Stop()
		sv.retry = nil
	}
	if sv.done != nil && bytes.Equal(current(s).Certificate[0], k.Leaf().Raw) {
		return // certinel already serves this certificate and is watching
	}
	sv.stopWatch()
	k.sentinel.Store(s)
	k.observe()
	sv.startWatch(ctx, s)
}

// scheduleRetry arranges the next attempt after the backoff delay, unless
// one is already pending.
func (sv *supervisor) scheduleRetry() {
	if sv.retry == nil {
		sv.retry = time.NewTimer(sv.backoff.next())
	}
}

func (sv *supervisor) retryC() <-chan time.Time {
	if sv.retry == nil {
		return nil
	}
	return sv.retry.C
}

// pairID is the identity of a certificate file and of its key file, the
// same identity check internal/filewatch polls.
type pairID struct{ cert, key filewatch.ID }

func statPair(cert, key string) pairID {
	return pairID{cert: filewatch.Stat(cert), key: filewatch.Stat(key)}
}

// backoff is an exponential delay: min, doubling on each next, up to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
