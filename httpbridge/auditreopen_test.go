package httpbridge

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditReopenFailureKeepsOldFile: the audit file is the access log's
// reopenable file; when its path cannot be opened again (the directory
// was moved away) the records keep going to the file in use, and one
// Error line says why.
func TestAuditReopenFailureKeepsOldFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var files AuditFiles
	a, err := files.Open(filepath.Join(dir, "audit.log"), log, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Write(sampleRecord("before", 0))
	moved := dir + ".old"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	a.Reopen()
	a.Write(sampleRecord("after", 1))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := readLines(t, filepath.Join(moved, "audit.log")); len(lines) != 2 {
		t.Errorf("%d records in the file in use, want 2 (before and after the failed reopen)", len(lines))
	}
	if !strings.Contains(logs.String(), "audit log not reopened") || !strings.Contains(logs.String(), "check that the directory exists") {
		t.Errorf("no Error line for the failed reopen: %s", logs.String())
	}
}
