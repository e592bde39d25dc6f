package filewatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitLimit bounds every wait on the change callback: reaching it means
// the change was never noticed, a failure, not a way to synchronise.
const waitLimit = 30 * time.Second

// noPoll is a poll interval no test lasts, so that a change noticed in an
// events test was noticed by fsnotify.
const noPoll = time.Hour

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// renameOver replaces path the way most tools do: a new file renamed over it.
func renameOver(t *testing.T, path, data string) {
	t.Helper()
	writeFile(t, path+".new", data)
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// k8sDir lays a file out as kubelet's AtomicWriter does for a Secret or
// ConfigMap volume: dir/NAME -> ..data/NAME, dir/..data -> ..<timestamp>;
// an update writes a new timestamped directory, renames a new ..data
// symlink over the old one and removes the old directory.
type k8sDir struct {
	t        *testing.T
	dir, cur string
	gen      int
}

func newK8sDir(t *testing.T, name, data string) (*k8sDir, string) {
	d := &k8sDir{t: t, dir: t.TempDir()}
	d.update(name, data)
	if err := os.Symlink(filepath.Join("..data", name), filepath.Join(d.dir, name)); err != nil {
		t.Fatal(err)
	}
	return d, filepath.Join(d.dir, name)
}

func (d *k8sDir) update(name, data string) {
	t := d.t
	t.Helper()
	d.gen++
	ts := fmt.Sprintf("..2026_01_02_03_04_05.%09d", d.gen)
	if err := os.Mkdir(filepath.Join(d.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d.dir, ts, name), data)
	if err := os.Symlink(ts, filepath.Join(d.dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(d.dir, "..data_tmp"), filepath.Join(d.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if d.cur != "" {
		if err := os.RemoveAll(filepath.Join(d.dir, d.cur)); err != nil {
			t.Fatal(err)
		}
	}
	d.cur = ts
}

// start runs a Watcher of file until the test ends and returns the channel
// its ChangedFunc signals on, each time with the file's contents then ("" if
// it is missing).
func start(t *testing.T, cfg Config) <-chan string {
	t.Helper()
	changed := make(chan string, 64)
	cfg.ChangedFunc = func() {
		b, _ := os.ReadFile(cfg.File)
		changed <- string(b)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v; want nil after cancel", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return within %s of cancel", waitLimit)
		}
	})
	return changed
}

// waitFor waits until a change is reported with contents want; reports of
// intermediate states (a burst seen half-way) are skipped.
func waitFor(t *testing.T, changed <-chan string, want string) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case got := <-changed:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("no change to %q reported within %s", want, waitLimit)
		}
	}
}

// TestWatcherNotices: each way a file is changed in practice is reported,
// by fsnotify alone (the poll is an hour away) and by the poll alone
// (PollOnly).
func TestWatcherNotices(t *testing.T) {
	type change struct {
		name string
		do   func(t *testing.T) (file string, steps []func() string)
	}
	plain := func(t *testing.T, write func(t *testing.T, file, data string)) (string, []func() string) {
		file := filepath.Join(t.TempDir(), "watched.yaml")
		writeFile(t, file, "v1")
		return file, []func() string{
			func() string { write(t, file, "v2"); return "v2" },
			func() string { write(t, file, "v3-longer"); return "v3-longer" },
		}
	}
	changes := []change{
		{"in-place write", func(t *testing.T) (string, []func() string) { return plain(t, writeFile) }},
		{"rename-over", func(t *testing.T) (string, []func() string) { return plain(t, renameOver) }},
		{"kubernetes ..data symlink swap", func(t *testing.T) (string, []func() string) {
			d, file := newK8sDir(t, "watched.yaml", "v1")
			return file, []func() string{
				func() string { d.update("watched.yaml", "v2"); return "v2" },
				func() string { d.update("watched.yaml", "v3"); return "v3" },
			}
		}},
		{"removed then restored", func(t *testing.T) (string, []func() string) {
			file := filepath.Join(t.TempDir(), "watched.yaml")
			writeFile(t, file, "v1")
			return file, []func() string{
				func() string { os.Remove(file); return "" },
				func() string { writeFile(t, file, "v2"); return "v2" },
				func() string { os.Remove(file); return "" },
				func() string { renameOver(t, file, "v3"); return "v3" },
			}
		}},
	}
	modes := []struct {
		name string
		cfg  Config
	}{
		{"events", Config{PollInterval: noPoll, SettleDelay: time.Millisecond}},
		{"poll only", Config{PollInterval: 5 * time.Millisecond, PollOnly: true}},
	}
	for _, m := range modes {
		for _, c := range changes {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				file, steps := c.do(t)
				cfg := m.cfg
				cfg.File = file
				changed := start(t, cfg)
				for _, step := range steps {
					waitFor(t, changed, step())
				}
			})
		}
	}
}

// TestWatcherChangeBeforeRun: a change made before the watch was set up
// (between New and Run, or after the caller's read and before New, given
// as Since) is reported by Run.
func TestWatcherChangeBeforeRun(t *testing.T) {
	tests := []struct {
		name  string
		since bool // take Since before the change, New after it
	}{
		{"between New and Run", false},
		{"between the read (Since) and New", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "watched.yaml")
			writeFile(t, file, "v1")
			cfg := Config{File: file, PollInterval: noPoll}
			if tt.since {
				cfg.Since = Stat(file)
				renameOver(t, file, "v2")
				waitFor(t, start(t, cfg), "v2")
				return
			}
			changed := make(chan string, 4)
			cfg.ChangedFunc = func() {
				b, _ := os.ReadFile(file)
				changed <- string(b)
			}
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			renameOver(t, file, "v2")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx) }()
			waitFor(t, changed, "v2")
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no file", Config{ChangedFunc: func() {}}},
		{"no ChangedFunc", Config{File: "/etc/hosts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil {
				t.Fatal("New succeeded; want an error")
			}
		})
	}
}

// TestStat: the identity changes with each kind of write and is zero for a
// missing file.
func TestStat(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if id := Stat(file); !id.Missing() {
		t.Fatalf("Stat of a missing file = %+v; want the zero ID", id)
	}
	writeFile(t, file, "a")
	first := Stat(file)
	if first.Missing() {
		t.Fatal("Stat of a file is the zero ID")
	}
	renameOver(t, file, "a")
	if Stat(file) == first {
		t.Error("a rename-over with the same contents kept the ID; want a new inode noticed")
	}
}
