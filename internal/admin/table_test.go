package admin

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestWriteUpstreamTableGolden(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := []upstream.Status{
		{Route: "registry", Upstream: "10.1.0.10:443", State: upstream.StateReady, Healthy: true,
			ActiveConnections: 12, LastCheck: now.Add(-2 * time.Second)},
		{Route: "registry", Upstream: "registry-2.internal:443", State: upstream.StateDrain, Healthy: true,
			ActiveConnections: 3, LastCheck: now.Add(-1500 * time.Millisecond)},
		{Route: "registry", Upstream: "[2001:db8::1]:443", State: upstream.StateMaint,
			LastCheck: now.Add(-3*time.Hour - 25*time.Minute), LastError: "tls: handshake failure:\n\tremote error"},
		{Route: "mirror", Upstream: "10.2.0.1:443", State: upstream.StateReady,
			LastCheck: now.Add(-4*time.Minute - 5*time.Second), LastError: "dial tcp 10.2.0.1:443: connect: connection refused"},
		{Route: "mirror", Upstream: "10.2.0.2:443", State: upstream.StateReady},
	}
	var buf bytes.Buffer
	if err := writeUpstreamTable(&buf, st, now); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "upstreams.golden")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("table differs from %s (go test -update rewrites it):\n%s", golden, buf.Bytes())
	}
}

func TestWriteUpstreamTableEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteUpstreamTable(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if want := "ROUTE  UPSTREAM  STATE  HEALTH  ACTIVE  LAST_CHECK  LAST_ERROR\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		t    time.Time
		want string
	}{
		{"never checked", time.Time{}, "never"},
		{"just now", now, "0s ago"},
		{"rounded", now.Add(-2400 * time.Millisecond), "2s ago"},
		{"clock ahead", now.Add(time.Minute), "0s ago"},
		{"minutes", now.Add(-61 * time.Second), "1m1s ago"},
		{"hours", now.Add(-2*time.Hour - 59*time.Minute - 59*time.Second), "2h59m ago"},
		{"days", now.Add(-50 * time.Hour), "2d2h ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := age(tt.t, now); got != tt.want {
				t.Errorf("age = %q, want %q", got, tt.want)
			}
		})
	}
}
