package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/testkit"
)

// connect opens and closes one tunnel through the gateway for sni.
func (w *world) connect(sni string) {
	w.t.Helper()
	c, err := w.dialTLS(sni)
	if err != nil {
		w.t.Fatal(err)
	}
	echoRoundTrip(w.t, c, "x")
	c.Close()
}

// countLines returns the lines of path holding sub.
func countLines(path, sub string) int {
	data, _ := os.ReadFile(path)
	return strings.Count(string(data), sub)
}

// TestAccessLogFile: with log.access set to a file, the connection lines
// go there and not to the process log; every reload reopens it (also one
// that is rejected: logrotate's SIGHUP), so that a rotated file is left
// alone; a reload can name another file.
func TestAccessLogFile(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	access := filepath.Join(w.dir, "access.log")
	conf := func(file string) string {
		return fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())) + "log:\n  access: " + file + "\n"
	}
	w.writeConfig(conf(access))
	w.start()

	w.connect("a.test")
	testkit.Poll(t, "a connection line in the access log", func() bool { return countLines(access, "msg=connection") == 1 })
	if w.logs.Contains("msg=connection") {
		t.Errorf("connection line in the process log too:\n%s", w.logs)
	}

	// logrotate: rename, then SIGHUP. The reload is rejected (an invalid
	// file at that moment) and still reopens the access log.
	if err := os.Rename(access, access+".1"); err != nil {
		t.Fatal(err)
	}
	w.writeConfig("listen: {}\n")
	if err := w.g.Reload(t.Context(), "SIGHUP"); err == nil {
		t.Fatal("Reload accepted an invalid file")
	}
	<-w.reloaded
	w.connect("a.test")
	testkit.Poll(t, "a connection line in the new access log", func() bool { return countLines(access, "msg=connection") == 1 })
	if n := countLines(access+".1", "msg=connection"); n != 1 {
		t.Errorf("rotated file has %d connection lines, want 1 (written before the rotation)", n)
	}

	other := filepath.Join(w.dir, "other.log")
	w.writeConfig(conf(other))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	w.connect("a.test")
	testkit.Poll(t, "a connection line in the file the reload named", func() bool { return countLines(other, "msg=connection") == 1 })
}

// TestAccessLogCannotOpen: a log.access file the gateway cannot open
// stops Run at start with a configuration error naming the key.
func TestAccessLogCannotOpen(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	// A dangling symlink: the parser accepts a missing file in an existing
	// directory, and opening it fails (as root, a mode would not).
	link := filepath.Join(w.dir, "access.log")
	if err := os.Symlink(filepath.Join(w.dir, "missing", "access.log"), link); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())) + "log:\n  access: access.log\n")
	g, err := New(Options{ConfigFile: w.file, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Run(t.Context())
	var list config.ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "snigate.yaml:12: log.access: cannot write the access log: open "+link+": no such file or directory") {
		t.Fatalf("Run: %v; want a configuration error at log.access", err)
	}
}

// TestFirstLogLine: the first line of the log names the version and the
// configuration file.
func TestFirstLogLine(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "5s", spliceRoute("a", "a.test", a.addr())))
	w.start()
	first, _, _ := strings.Cut(w.logs.String(), "\n")
	for _, want := range []string{`msg="snigate starting"`, "version=", "commit=", "config=" + w.file} {
		if !strings.Contains(first, want) {
			t.Errorf("first log line %q lacks %q", first, want)
		}
	}
}
