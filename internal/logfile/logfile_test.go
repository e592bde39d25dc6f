package logfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReopenAfterRotation: after logrotate renames the file, Reopen writes
// to a new file at the path; the rotated one keeps the earlier lines.
func TestReopenAfterRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	os.WriteFile(path, []byte("kept\n"), 0o600)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("one\n"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("two\n")) // still the renamed file, until Reopen
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("three\n"))
	if got := read(t, path+".1"); got != "kept\none\ntwo\n" {
		t.Errorf("rotated file %q", got)
	}
	if got := read(t, path); got != "three\n" {
		t.Errorf("new file %q", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != Mode {
		t.Errorf("new file mode %v, want %v", fi.Mode().Perm(), os.FileMode(Mode))
	}
}

// TestReopenAtKeepsFileOnError: a path that cannot be opened leaves the
// file in use.
func TestReopenAtKeepsFileOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.ReopenAt(filepath.Join(dir, "missing", "b.log")); err == nil {
		t.Fatal("ReopenAt a missing directory succeeded")
	}
	f.Write([]byte("x\n"))
	if got := read(t, path); got != "x\n" || f.Path() != path {
		t.Errorf("after a failed ReopenAt: %q at %s", got, f.Path())
	}
	f.Close()
	if _, err := f.Write([]byte("y\n")); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Write after Close: %v, want os.ErrClosed", err)
	}
}
