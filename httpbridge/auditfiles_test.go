package httpbridge

import (
	"path/filepath"
	"sync"
	"testing"
)

// TestAuditFilesAdoptSharesTheWriter: a new owner's handles on a file
// the previous owner has open write through the previous owner's writer
// (a reload's two generations: one writer per file, lines never
// interleave); the file stays open while either owner's handle is, and
// a file only the new owner names keeps its own writer.
func TestAuditFilesAdoptSharesTheWriter(t *testing.T) {
	dir := t.TempDir()
	shared, own := filepath.Join(dir, "audit.log"), filepath.Join(dir, "own.log")
	var prev, next AuditFiles
	a, err := prev.Open(shared, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := next.Open(shared, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := next.Open(shared, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := next.Open(own, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := b.f
	next.Adopt(&prev)
	if b.f != a.f || c.f != a.f || d.f == a.f {
		t.Fatal("after Adopt the new owner's handles on the shared file do not write through the previous owner's writer")
	}
	select {
	case <-fresh.done:
	default:
		t.Error("the writer the new owner opened for the shared file still runs")
	}
	var wg sync.WaitGroup
	for i, h := range []*AuditLog{a, b, c} {
		wg.Go(func() {
			for n := range 300 {
				h.Write(sampleRecord(string(rune('a'+i)), n))
			}
		})
	}
	wg.Wait()
	if err := prev.Close(); err != nil { // the previous generation retires
		t.Fatal(err)
	}
	b.Write(sampleRecord("after", 0))
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, shared)
	if len(lines) != 901 {
		t.Fatalf("%d lines in the shared file, want 901", len(lines))
	}
	for _, l := range lines {
		parseAuditLine(t, l)
	}
	select {
	case <-a.f.done:
	default:
		t.Error("the shared writer runs on after every handle was closed")
	}
}
