package sni

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestAccessLog: Config.AccessLog takes the connection lines (log.access
// names a file, or off) and the process log keeps the rest; SetConfig
// moves them, and nil sends them back to Logger.
func TestAccessLog(t *testing.T) {
	access := newLogSink()
	w := newWorld(t, Config{AccessLog: slog.New(slog.NewTextHandler(access, nil))}, "", registryRoute(t, sinkUpstream(t).addr))
	junk := func() {
		c := w.dial(t)
		c.Write([]byte("junk!"))
		readAll(t, c)
	}
	junk()
	access.wait(t, "msg=connection", "result=not_tls")
	if strings.Contains(w.logs.String(), "msg=connection") {
		t.Errorf("connection line in the process log too:\n%s", w.logs)
	}
	if !strings.Contains(w.logs.String(), "level=WARN") {
		t.Errorf("the client fault's Warn line is not in the process log:\n%s", w.logs)
	}

	cfg := *w.srv.cfg.Load()
	cfg.AccessLog = nil
	if err := w.srv.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	junk()
	w.logs.wait(t, "msg=connection", "result=not_tls")
	if n := strings.Count(access.String(), "msg=connection"); n != 1 {
		t.Errorf("%d connection lines in the access log after AccessLog was unset, want 1", n)
	}

	off := offHandler{asked: make(chan struct{}, 8)} // log.access: off
	cfg.AccessLog = slog.New(off)
	if err := w.srv.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	junk()
	<-off.asked // the server has decided where its line goes
	if n := strings.Count(w.logs.String(), "msg=connection"); n != 1 {
		t.Errorf("%d connection lines in the process log with the access log off, want 1:\n%s", n, w.logs)
	}
}

// offHandler is a disabled handler, as log.access: off builds, that says
// when it was asked.
type offHandler struct{ asked chan struct{} }

func (h offHandler) Enabled(context.Context, slog.Level) bool {
	h.asked <- struct{}{}
	return false
}
func (h offHandler) Handle(context.Context, slog.Record) error { return nil }
func (h offHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h offHandler) WithGroup(string) slog.Handler             { return h }
