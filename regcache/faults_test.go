package regcache

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFaultReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "disk full", err: syscall.ENOSPC, want: reasonNoSpace},
		{name: "quota", err: syscall.EDQUOT, want: reasonNoSpace},
		{name: "read-only mount", err: syscall.EROFS, want: reasonUnwritable},
		{name: "permissions", err: syscall.EACCES, want: reasonUnwritable},
		{name: "bad disk", err: syscall.EIO, want: reasonIO},
		{name: "anything else", err: errors.New("?"), want: reasonIO},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := faultReason(tt.err); got != tt.want {
				t.Fatalf("faultReason(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// TestFaultLogRateLimited: every fault is counted and matches ErrBypass,
// but a burst of them logs one Error line per reason per faultLogEvery,
// and the next line says how many were not logged.
func TestFaultLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	c := openTest(t, "", 1<<20)
	c.log = slog.New(slog.NewTextHandler(&buf, nil))
	now := time.Now()
	for range 5 {
		if err := c.fault("write x", syscall.ENOSPC); !errors.Is(err, ErrBypass) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("fault error = %v, want ErrBypass wrapping the cause", err)
		}
	}
	c.fault("read y", syscall.EIO)
	c.logFault(reasonNoSpace, "write x", syscall.ENOSPC, now.Add(faultLogEvery+time.Second))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (nospace, io, nospace again later):\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[2], "suppressed=4") {
		t.Errorf("the later line does not count the 4 faults not logged: %s", lines[2])
	}
	if s := c.Stats(); s.Errors != 6 {
		t.Errorf("Errors = %d, want 6", s.Errors)
	}
}
