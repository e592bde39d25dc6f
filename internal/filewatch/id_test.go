package filewatch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIDOfOpenFile: the ID of an open file's FileInfo is the ID of its
// path, carries its size, and an in-place write of the same size that
// moves the times changes it.
func TestIDOfOpenFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	writeFile(t, file, "abc")
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	id := IDOf(fi)
	if id != Stat(file) {
		t.Errorf("IDOf(open file) = %+v, Stat(path) = %+v; want the same", id, Stat(file))
	}
	if id.Size() != 3 {
		t.Errorf("Size = %d, want 3", id.Size())
	}
	fi2, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	later := fi2.ModTime().Add(1e9)
	if err := os.Chtimes(file, later, later); err != nil {
		t.Fatal(err)
	}
	if Stat(file) == id {
		t.Error("a change of mtime kept the ID")
	}
}
