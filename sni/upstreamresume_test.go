package sni

import (
	"fmt"
	"testing"
	"time"
)

// TestDeclineMemory: a key is recent for DeclineMemory after note, then
// forgotten; the memory holds at most maxDeclines keys, dropping expired
// ones first, else the one forgotten soonest.
func TestDeclineMemory(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name string
		run  func(d *declineMemory) (key string, at time.Time)
		want bool
	}{
		{name: "empty", run: func(d *declineMemory) (string, time.Time) { return "a", t0 }, want: false},
		{name: "just noted", run: func(d *declineMemory) (string, time.Time) { d.note("a", t0); return "a", t0 }, want: true},
		{name: "another key", run: func(d *declineMemory) (string, time.Time) { d.note("a", t0); return "b", t0 }, want: false},
		{name: "just before it expires", run: func(d *declineMemory) (string, time.Time) {
			d.note("a", t0)
			return "a", t0.Add(DeclineMemory - time.Nanosecond)
		}, want: true},
		{name: "expired", run: func(d *declineMemory) (string, time.Time) { d.note("a", t0); return "a", t0.Add(DeclineMemory) }, want: false},
		{name: "noted again: the later time counts", run: func(d *declineMemory) (string, time.Time) {
			d.note("a", t0)
			d.note("a", t0.Add(time.Minute))
			return "a", t0.Add(DeclineMemory)
		}, want: true},
		{name: "full: the one forgotten soonest is dropped", run: func(d *declineMemory) (string, time.Time) {
			for i := range maxDeclines {
				d.note(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
			}
			d.note("new", t0.Add(time.Hour/60))
			return "0", t0.Add(time.Hour / 60)
		}, want: false},
		{name: "full: the others are kept", run: func(d *declineMemory) (string, time.Time) {
			for i := range maxDeclines {
				d.note(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
			}
			d.note("new", t0.Add(time.Hour/60))
			return "1", t0.Add(time.Hour / 60)
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d declineMemory
			key, at := tt.run(&d)
			if got := d.recent(key, at); got != tt.want {
				t.Errorf("recent(%q) = %v, want %v", key, got, tt.want)
			}
			if n := len(d.until); n > maxDeclines || int(d.n.Load()) != n {
				t.Errorf("%d keys held, count %d; want at most %d and the count equal", n, d.n.Load(), maxDeclines)
			}
		})
	}
}
