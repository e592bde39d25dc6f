package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"syscall"
)

// NewLogger builds the process logger: format "text" or "json", level
// "debug", "info", "warn" or "error". Both formats write durations the
// same way, as seconds in a decimal number (duration=0.0123), and leave
// out an "err" attribute that holds nothing (see replaceAttr). Text lines
// written to the systemd journal (w is the stream JOURNAL_STREAM names)
// have no time= field: journald stamps every line itself, and journalctl
// would show two times.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	h, err := newHandler(w, format, lv)
	if err != nil {
		return nil, err
	}
	if _, text := h.(*slog.TextHandler); text && toJournal(w) {
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv, ReplaceAttr: withoutTime})
	}
	return slog.New(h), nil
}

// withoutTime is replaceAttr that also drops the record's time.
func withoutTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return replaceAttr(groups, a)
}

// toJournal reports whether w is the stream systemd connected to the
// journal: its device and inode are those JOURNAL_STREAM gives
// ("DEV:INODE", systemd.exec(5)). A stream redirected elsewhere (a pipe
// to a file) keeps its times.
func toJournal(w io.Writer) bool {
	want := os.Getenv("JOURNAL_STREAM")
	f, ok := w.(*os.File)
	if want == "" || !ok {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return want == fmt.Sprintf("%d:%d", uint64(st.Dev), uint64(st.Ino))
}

// newHandler returns the handler of format writing to w.
func newHandler(w io.Writer, format string, level slog.Level) (slog.Handler, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr}
	switch strings.ToLower(format) {
	case "text", "":
		return slog.NewTextHandler(w, opts), nil
	case "json":
		return slog.NewJSONHandler(w, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// replaceAttr gives both formats one encoding: a time.Duration becomes
// seconds as a float rounded to the microsecond (the text handler would
// write "1.5s", the JSON handler 1500000000 nanoseconds), and an "err"
// attribute with an empty or nil value is dropped (a line about a
// success has no err= field).
func replaceAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch {
	case v.Kind() == slog.KindDuration:
		return slog.Float64(a.Key, math.Round(v.Duration().Seconds()*1e6)/1e6)
	case a.Key == "err" && isEmpty(v):
		return slog.Attr{}
	}
	return a
}

// isEmpty reports a value that says nothing: "", or a nil error.
func isEmpty(v slog.Value) bool {
	switch v.Kind() {
	case slog.KindString:
		return v.String() == ""
	case slog.KindAny:
		return v.Any() == nil
	}
	return false
}
