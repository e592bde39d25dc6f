package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLogEncoding: text and JSON write a duration the same way (seconds),
// and a line about a success has no err field (the health check's
// "upstream health changed ... to=up" line had err= with nothing after it).
func TestLogEncoding(t *testing.T) {
	tests := []struct {
		name   string
		format string
		args   []any
		want   []string
		absent []string
	}{
		{name: "text duration", format: "text", args: []any{"duration", 1500 * time.Millisecond},
			want: []string{"duration=1.5 "}},
		{name: "json duration", format: "json", args: []any{"duration", 1500 * time.Millisecond},
			want: []string{`"duration":1.5,`}},
		{name: "sub-millisecond", format: "text", args: []any{"duration", 1234567 * time.Nanosecond},
			want: []string{"duration=0.001235 "}},
		{name: "text empty err", format: "text", args: []any{"err", "", "to", "up"},
			want: []string{"to=up"}, absent: []string{"err="}},
		{name: "json nil err", format: "json", args: []any{"err", error(nil), "to", "up"},
			want: []string{`"to":"up"`}, absent: []string{`"err"`}},
		{name: "err kept", format: "text", args: []any{"err", errors.New("refused")},
			want: []string{"err=refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			l, err := NewLogger(&buf, tt.format, "info")
			if err != nil {
				t.Fatal(err)
			}
			l.Info("m", append(tt.args, "end", 1)...)
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("%q lacks %q", buf.String(), w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(buf.String(), a) {
					t.Errorf("%q has %q", buf.String(), a)
				}
			}
		})
	}
}

// TestTextLogToJournalHasNoTime is issue 27 item 8: under systemd,
// --log-format text lines carried time= beside journald's own stamp.
// Written to the stream JOURNAL_STREAM names, they have none; to any
// other file, and in JSON, they keep it.
func TestTextLogToJournalHasNoTime(t *testing.T) {
	journal, err := os.Create(filepath.Join(t.TempDir(), "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	other, err := os.Create(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fi, err := journal.Stat()
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino)))
	tests := []struct {
		name     string
		f        *os.File
		format   string
		wantTime bool
	}{
		{name: "text to the journal", f: journal, format: "text", wantTime: false},
		{name: "json to the journal", f: journal, format: "json", wantTime: true},
		{name: "text elsewhere", f: other, format: "text", wantTime: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			must(t, tt.f.Truncate(0))
			_, err := tt.f.Seek(0, 0)
			must(t, err)
			l, err := NewLogger(tt.f, tt.format, "info")
			must(t, err)
			l.Info("listening", "listener", "127.0.0.1:443", "duration", time.Second)
			data, err := os.ReadFile(tt.f.Name())
			must(t, err)
			line := string(data)
			hasTime := strings.Contains(line, "time=") || strings.Contains(line, `"time":`)
			if hasTime != tt.wantTime || !strings.Contains(line, "listening") || !strings.Contains(line, "duration") {
				t.Errorf("line %q: time present %v, want %v", line, hasTime, tt.wantTime)
			}
		})
	}
}
