package snigate

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestWatcher walks a config file through the changes operators make:
// an atomic replace, a broken file, an in-place edit, a deletion and a
// restore. After each, the routed names must be the last good file's, and
// each failure is logged and counted once.
func TestWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "snigate.yaml", snigateYAML("one.example.test"))
		log := &recordingLog{}
		m := NewMetrics(prometheus.NewRegistry())
		h := newWatchedHandler(t, path, m, log)
		if err := h.OnStartup(); err != nil {
			t.Fatal(err)
		}
		defer h.OnShutdown()

		steps := watchSteps(t, dir, path)
		for _, st := range steps {
			st.change()
			time.Sleep(watchInterval)
			synctest.Wait()
			for _, n := range st.routed {
				if !routed(h, n) {
					t.Errorf("%s: %s is not routed\nlog:\n%s", st.name, n, log)
				}
			}
			for _, n := range st.notRouted {
				if routed(h, n) {
					t.Errorf("%s: %s is still routed", st.name, n)
				}
			}
			if got := testutil.ToFloat64(m.reloads.WithLabelValues(resultSuccess)); got != st.successes {
				t.Errorf("%s: %v successful reloads counted, want %v", st.name, got, st.successes)
			}
			if got := testutil.ToFloat64(m.reloads.WithLabelValues(resultFailure)); got != st.failures {
				t.Errorf("%s: %v failed reloads counted, want %v", st.name, got, st.failures)
			}
		}
		if n := log.count("keeping the routed names from the last good load"); n != 2 {
			t.Errorf("%d failures logged, want 2:\n%s", n, log)
		}
	})
}

// watchStep is a change to the watched file and what follows it: the
// names routed and not, and the reloads counted so far.
type watchStep struct {
	name      string
	change    func()
	routed    []string
	notRouted []string
	successes float64
	failures  float64
}

// watchSteps change the file at path (in dir) in every way TestWatcher
// covers.
func watchSteps(t *testing.T, dir, path string) []watchStep {
	return []watchStep{
		{"initial load", func() {}, []string{"one.example.test"}, []string{"two.example.test"}, 0, 0},
		{"atomic replace with a new route",
			func() { replaceFile(t, path, snigateYAML("two.example.test")) },
			[]string{"two.example.test"}, []string{"one.example.test"}, 1, 0},
		{"broken file keeps the last good names",
			func() { replaceFile(t, path, "listen:\n  tls: [\":8443\"]\nroutes: nope\n") },
			[]string{"two.example.test"}, []string{"one.example.test"}, 1, 1},
		{"in-place edit",
			func() { writeFile(t, dir, "snigate.yaml", snigateYAML("two.example.test", "three.example.test")) },
			[]string{"two.example.test", "three.example.test"}, nil, 2, 1},
		{"deleted file keeps the last good names",
			func() { os.Remove(path) },
			[]string{"two.example.test", "three.example.test"}, nil, 2, 2},
		{"still deleted: not counted again", func() {},
			[]string{"two.example.test", "three.example.test"}, nil, 2, 2},
		{"restored", func() { replaceFile(t, path, snigateYAML("four.example.test")) },
			[]string{"four.example.test"}, []string{"two.example.test"}, 3, 2},
	}
}

// TestWatcherShutdown: OnShutdown stops the goroutine OnStartup started
// (goleak in TestMain checks it is gone), and both are idempotent.
func TestWatcherShutdown(t *testing.T) {
	path := writeFile(t, t.TempDir(), "snigate.yaml", snigateYAML("one.example.test"))
	h := newWatchedHandler(t, path, nil, &recordingLog{})
	for range 2 {
		if err := h.OnStartup(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := h.OnShutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReloadZero: `reload 0` reads the file once and never again.
func TestReloadZero(t *testing.T) {
	path := writeFile(t, t.TempDir(), "snigate.yaml", snigateYAML("one.example.test"))
	c := caddy.NewTestController("dns", "snigate {\nanswer 192.0.2.10\nconfig "+path+"\nreload 0\n}")
	s, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(s, nil, &recordingLog{})
	if err != nil {
		t.Fatal(err)
	}
	if h.watch != nil {
		t.Error("reload 0 built a watcher")
	}
	if !routed(h, "one.example.test") {
		t.Error("the file's route is not routed")
	}
}

const watchInterval = time.Second

func newWatchedHandler(t *testing.T, path string, m *Metrics, log logger) *Snigate {
	t.Helper()
	c := caddy.NewTestController("dns", "snigate {\nanswer 192.0.2.10\nconfig "+path+"\nreload "+watchInterval.String()+"\n}")
	s, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(s, m, log)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func routed(h *Snigate, name string) bool {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	_, ok := h.policy.Load().Answer(m)
	return ok
}

// replaceFile writes content beside path and renames it over path, as
// editors and Kubernetes volume updates do: the inode changes.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
