package e2e

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Readiness waits: a bounded number of attempts a fixed step apart. These
// wait for something observable to become true; none sleeps to synchronise.
const (
	pollStep  = 50 * time.Millisecond
	pollTries = 100 // 5s: a dial, a request
	// startTries bounds a daemon's start (a loaded CI machine runs other
	// packages' tests at the same time): 20s.
	startTries = 400
)

// errGaveUp wraps a condition that can no longer become true (the process
// it waits for has exited): poll stops at once.
var errGaveUp = errors.New("gave up")

// poll calls cond up to tries times, step apart, until it returns nil.
func poll(tries int, step time.Duration, cond func() error) error {
	tick := time.NewTicker(step)
	defer tick.Stop()
	var err error
	for i := range tries {
		if err = cond(); err == nil || errors.Is(err, errGaveUp) {
			return err
		}
		if i < tries-1 {
			<-tick.C
		}
	}
	return fmt.Errorf("not ready after %s: %w", time.Duration(tries)*step, err)
}

// waitTCP waits until addr accepts TCP connections inside ns, giving up if
// p exits first.
func waitTCP(ns *netns, addr string, p *proc) error {
	return poll(startTries, pollStep, func() error {
		if p != nil && !p.running() {
			return fmt.Errorf("%w: %s exited: %v", errGaveUp, p.name, p.err)
		}
		return ns.do(func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			return c.Close()
		})
	})
}
