package main

import (
	"sync"
	"time"
)

// loopResult is the outcome of a closed-loop run.
type loopResult struct {
	ok, errs int
	firstErr error
	elapsed  time.Duration
	lat      latencies
}

func (r loopResult) rate() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// errorPause keeps a failing target from turning a worker into a busy loop.
const errorPause = 5 * time.Millisecond

// closedLoop runs conc workers for d; each worker gets its own op from
// newOp and calls it back to back, timing each call. Every call is bounded
// by its own deadlines, so the run ends shortly after d.
func closedLoop(conc int, d time.Duration, newOp func() func() error) loopResult {
	var (
		mu  sync.Mutex
		res loopResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for range conc {
		op := newOp()
		wg.Go(func() {
			w := runWorker(op, deadline)
			mu.Lock()
			defer mu.Unlock()
			res.ok += len(w.lat)
			res.errs += w.errs
			if res.firstErr == nil {
				res.firstErr = w.firstErr
			}
			res.lat.merge(w.lat)
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

type workerResult struct {
	lat      []time.Duration
	errs     int
	firstErr error
}

func runWorker(op func() error, deadline time.Time) workerResult {
	w := workerResult{lat: make([]time.Duration, 0, 4096)}
	for time.Now().Before(deadline) {
		t := time.Now()
		if err := op(); err != nil {
			w.errs++
			if w.firstErr == nil {
				w.firstErr = err
			}
			time.Sleep(errorPause)
			continue
		}
		w.lat = append(w.lat, time.Since(t))
	}
	return w
}

// maxOpenInFlight bounds the operations an open-loop run has in flight;
// one that finds them all busy waits, and its latency counts the wait.
const maxOpenInFlight = 256

// openLoop starts operations at a fixed rate for d, whatever the target's
// speed (an open loop: the load does not back off when the target slows
// down), and times each from the moment it was due, so that a stalled
// target's backlog shows in the latencies instead of lowering the load
// (no coordinated omission). newOp makes one op per concurrent slot.
func openLoop(rate float64, d time.Duration, newOp func() func() error) loopResult {
	ops := make(chan func() error, maxOpenInFlight)
	for range maxOpenInFlight {
		ops <- newOp()
	}
	var (
		mu  sync.Mutex
		res loopResult
		wg  sync.WaitGroup
	)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for due := start; due.Before(start.Add(d)); due = due.Add(interval) {
		if w := time.Until(due); w > 0 {
			time.Sleep(w) // pacing the load, not synchronising
		}
		op := <-ops
		wg.Go(func() {
			err := op()
			took := time.Since(due)
			ops <- op
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.errs++
				if res.firstErr == nil {
					res.firstErr = err
				}
				return
			}
			res.ok++
			res.lat.all = append(res.lat.all, took)
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}
