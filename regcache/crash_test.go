package regcache

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crashHelperEnv, set, makes the test binary the child of
// TestKillMidFillThenRestart: it fills the cache in that directory, says
// "half" once half the blob is on disk, and waits to be killed.
const crashHelperEnv = "REGCACHE_CRASH_HELPER_DIR"

const crashBlobSize, crashBlobSeed = 2 << 20, 7

func crashHelper() {
	dir := os.Getenv(crashHelperEnv)
	c, err := Open(Config{Route: "registry", Dir: dir, MaxSize: 1 << 30, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	b := newBlob(crashBlobSize, crashBlobSeed)
	half := len(b.data) / 2
	pr, pw := io.Pipe()
	go pw.Write(b.data[:half]) // and never more
	e, err := c.Fill(context.Background(), b.digest, func(context.Context) (Fetched, error) {
		return Fetched{Body: pr, Size: int64(len(b.data))}, nil
	})
	if err == nil {
		_, err = e.ReadAt(make([]byte, half), 0)
	}
	if err != nil {
		fmt.Println("fill:", err)
		os.Exit(1)
	}
	fmt.Println("half")
	select {}
}

// TestKillMidFillThenRestart: a process killed with SIGKILL half-way
// through a fill leaves only a temporary file, which the next Open
// removes; the digest is not served, and the next Fill fetches it whole.
func TestKillMidFillThenRestart(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "half\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	left := storedFiles(t, dir)
	if len(left) != 1 || !strings.HasPrefix(left[0], tmpName+string(filepath.Separator)) {
		t.Fatalf("after the kill: %v, want one partial file in tmp/", left)
	}
	c := openTest(t, dir, 1<<30)
	if files := storedFiles(t, dir); len(files) != 0 {
		t.Errorf("after Open: %v, want nothing", files)
	}
	b := newBlob(crashBlobSize, crashBlobSeed)
	if _, ok := c.Get(t.Context(), b.digest); ok {
		t.Fatal("the half-filled digest is served after the restart")
	}
	u := &upstream{b: b}
	fillAndRead(t, c, u)
	if u.fetches.Load() != 1 {
		t.Fatalf("%d fetches, want 1", u.fetches.Load())
	}
}

// TestOpenDropsHalfStored: what a crash between the two renames of a
// store leaves (content without metadata, or metadata without content)
// is removed at Open and never served; stray names are left alone.
func TestOpenDropsHalfStored(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, 1<<30)
	a, b := newBlob(1000, 8), newBlob(1000, 9)
	fillAndRead(t, c, &upstream{b: a})
	fillAndRead(t, c, &upstream{b: b})
	c.Close()
	da, _ := parseDigest(a.digest)
	db, _ := parseDigest(b.digest)
	os.Remove(c.metaPath(da))
	os.Remove(c.contentPath(db))
	stray := filepath.Join(dir, "sha256", "README")
	os.WriteFile(stray, []byte("mine"), 0o644)

	c = openTest(t, dir, 1<<30)
	for _, p := range []string{c.contentPath(da), c.metaPath(db)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	if got, err := os.ReadFile(stray); err != nil || !bytes.Equal(got, []byte("mine")) {
		t.Errorf("a file the cache did not write was touched: %q, %v", got, err)
	}
	if s := c.Stats(); s.Entries != 0 {
		t.Errorf("Entries = %d, want 0", s.Entries)
	}
}
