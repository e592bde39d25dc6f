package demo

import (
	"testing"
	"time"
)

// TestSeconds is issue 27 item 8: the tour printed "12ms" and "1.234s"
// while run's log lines say duration=0.012; both now write seconds.
func TestSeconds(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "milliseconds", d: 12*time.Millisecond + 400*time.Microsecond, want: "0.012s"},
		{name: "seconds", d: 1234 * time.Millisecond, want: "1.234s"},
		{name: "whole", d: 2 * time.Second, want: "2s"},
		{name: "below a millisecond", d: 300 * time.Microsecond, want: "0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := seconds(tt.d); got != tt.want {
				t.Errorf("seconds(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

// TestSelfCommand is issue 27 item 8: the --keep hints said "go run
// ./cmd/snigate" to someone who started an installed binary.
func TestSelfCommand(t *testing.T) {
	tests := []struct {
		name, arg0, want string
	}{
		{name: "installed binary", arg0: "/usr/bin/snigate", want: "/usr/bin/snigate"},
		{name: "on the PATH", arg0: "snigate", want: "snigate"},
		{name: "built here", arg0: "./bin/snigate", want: "./bin/snigate"},
		{name: "go run", arg0: "/tmp/go-build1234567/b001/exe/snigate", want: "go run ./cmd/snigate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := selfCommand(tt.arg0); got != tt.want {
				t.Errorf("selfCommand(%q) = %q, want %q", tt.arg0, got, tt.want)
			}
		})
	}
}
