package httpbridge

import (
	"bufio"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/oci"
)

var quiet = slog.New(slog.DiscardHandler)

func sampleRecord(route string, i int) *AuditRecord {
	return &AuditRecord{
		Time: time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.FixedZone("CET", 3600)), Route: route,
		Client: "10.0.0.21:53312", Node: "system:node:worker-3", Method: "GET",
		API:    oci.API{Kind: oci.KindManifest, Repository: "team/app", Reference: "v1.2"},
		Digest: dgst, Status: 200, Bytes: int64(1234 + i), Duration: 12500 * time.Microsecond, Upstream: "10.1.0.10:443",
	}
}

// TestAuditLineFormat: the record is one JSON object per line, keys in
// the contract's order, time in RFC 3339 with milliseconds in UTC.
func TestAuditLineFormat(t *testing.T) {
	a := newMemAudit(t, quiet, nil)
	a.log.Write(sampleRecord("registry", 0))
	a.wait(t, 1)
	want := `{"time":"2026-12-01T07:00:00.123Z","route":"registry","client":"10.0.0.21:53312",` +
		`"node":"system:node:worker-3","method":"GET","repository":"team/app",` +
		`"kind":"manifest","reference":"v1.2","digest":"` + dgst + `","status":200,` +
		`"bytes":1234,"duration_ms":12.5,"cache":"","signature":"","upstream":"10.1.0.10:443","error":"","auth":""}`
	if got := a.sink.lines()[0]; got != want {
		t.Errorf("line\n%s\nwant\n%s", got, want)
	}
}

// TestAuditSharedFile: two routes naming one file share its writer:
// every line whole, none lost; Reopen after a rename (logrotate) goes on
// in a new file at the old path.
func TestAuditSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	m := NewMetrics(nil)
	var files AuditFiles
	a, err := files.Open(path, quiet, m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := files.Open(path, quiet, m)
	if err != nil {
		t.Fatal(err)
	}
	if a.f != b.f {
		t.Fatal("two handles on one path have two writers")
	}
	var wg sync.WaitGroup
	for _, h := range []struct {
		log   *AuditLog
		route string
	}{{a, "one"}, {b, "two"}} {
		wg.Go(func() {
			for i := range 500 {
				h.log.Write(sampleRecord(h.route, i))
			}
		})
	}
	wg.Wait()
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	a.Reopen()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b.Write(sampleRecord("after", 0))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	old, fresh := readLines(t, path+".1"), readLines(t, path)
	if len(old)+len(fresh) != 1001 || len(fresh) < 1 || !strings.Contains(fresh[len(fresh)-1], `"route":"after"`) {
		t.Fatalf("%d lines in the rotated file, %d in the new one; want 1001 in all, the last in the new file", len(old), len(fresh))
	}
	for _, l := range append(old, fresh...) {
		parseAuditLine(t, l)
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues(DropQueueFull)); got != 0 {
		t.Errorf("dropped %v records", got)
	}
}

// TestAuditFilesShareWithinOne: handles on one path share a writer
// within one AuditFiles only (each process, and each test, has its own),
// and once its last handle is closed the path opens a new writer.
func TestAuditFilesShareWithinOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	var one, two AuditFiles
	a, err := one.Open(path, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := two.Open(path, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.f == b.f {
		t.Error("two AuditFiles share a writer")
	}
	for _, h := range []*AuditLog{a, b} {
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := one.Open(path, quiet, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.f == a.f {
		t.Error("a path whose last handle was closed kept its stopped writer")
	}
}

func readLines(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// TestAuditFullQueueDrops: while the disk is stuck, records beyond the
// queue are dropped and counted at once, never waited for; what was
// queued is written when the disk comes back.
func TestAuditFullQueueDrops(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	sink := newLineSink()
	sink.block = make(chan struct{})
	sink.entered = make(chan struct{}, 16)
	logs := testkit.NewLogSink()
	a := newMemAuditQueue(t, slog.New(slog.NewTextHandler(logs, nil)), m, 4, sink)
	a.log.Write(sampleRecord("registry", 0)) // taken by the writer, stuck in Write
	<-sink.entered
	for i := 1; i <= 10; i++ {
		a.log.Write(sampleRecord("registry", i)) // 4 queued, 6 dropped
	}
	if got := testutil.ToFloat64(m.dropped.WithLabelValues(DropQueueFull)); got != 6 {
		t.Errorf("dropped{queue_full} = %v, want 6", got)
	}
	logs.Wait(t, "audit record dropped", "reason=queue_full")
	sink.mu.Lock()
	close(sink.block)
	sink.block = nil
	sink.mu.Unlock()
	a.wait(t, 5)
}

// TestAuditWriteErrorDrops: a failing write drops its records, counted,
// with a log line; the writer goes on.
func TestAuditWriteErrorDrops(t *testing.T) {
	m := NewMetrics(nil)
	sink := newLineSink()
	sink.fail = errors.New("no space left on device")
	logs := testkit.NewLogSink()
	a := newMemAuditQueue(t, slog.New(slog.NewTextHandler(logs, nil)), m, 16, sink)
	a.log.Write(sampleRecord("registry", 0))
	logs.Wait(t, "audit records dropped", "no space left on device")
	if got := testutil.ToFloat64(m.dropped.WithLabelValues(DropWriteError)); got != 1 {
		t.Errorf("dropped{write_error} = %v, want 1", got)
	}
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	a.log.Write(sampleRecord("registry", 1))
	if l := a.wait(t, 1)[0]; l.Bytes != 1235 {
		t.Errorf("record after the failure: %+v", l)
	}
}

// TestOpenAuditError says what to change.
func TestOpenAuditError(t *testing.T) {
	_, err := new(AuditFiles).Open(filepath.Join(t.TempDir(), "missing", "audit.log"), quiet, nil)
	if err == nil || !regexp.MustCompile(`audit_log: .*no such file or directory: check that the directory exists`).MatchString(err.Error()) {
		t.Errorf("error %v", err)
	}
}
