package testkit

import (
	"testing"
	"time"
)

// pollEvery is how often Poll looks again: a poll interval, not a
// synchronisation delay.
const pollEvery = 2 * time.Millisecond

// Poll looks at cond until it holds, failing the test after WaitLimit
// with what it waited for. It is for state that has no event to wait on
// (goroutine counts, a connection set, an API's answer); wait on the
// event where there is one.
func Poll(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pollEvery)
	}
}
