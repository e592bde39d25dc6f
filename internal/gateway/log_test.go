package gateway

import (
	"bytes"
	"errors"
	"strings"
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
