package httpbridge

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/snigate/snigate/oci"
)

// TestAuditBound: a string whose JSON form exceeds the bound is cut at a
// character boundary with a marker that says how much was left out; the
// JSON form of the result stays within the bound plus the marker.
func TestAuditBound(t *testing.T) {
	tests := []struct {
		name, in string
		cut      bool
	}{
		{name: "short", in: "team/app"},
		{name: "exactly the bound", in: strings.Repeat("a", 64)},
		{name: "long ascii", in: strings.Repeat("a", 4000), cut: true},
		{name: "control bytes cost 6", in: strings.Repeat("\x01", 11), cut: true},
		{name: "invalid utf-8 costs 6", in: strings.Repeat("\xff", 11), cut: true},
		{name: "quotes cost 2", in: strings.Repeat(`"`, 33), cut: true},
		{name: "multi-byte kept whole", in: strings.Repeat("é", 40), cut: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := bound(tc.in, 64)
			if cut := got != tc.in; cut != tc.cut {
				t.Fatalf("bound cut %v, want %v: %q", cut, tc.cut, got)
			}
			if utf8.ValidString(tc.in) && !utf8.ValidString(got) {
				t.Errorf("cut inside a character: %q", got)
			}
			enc, _ := json.Marshal(got)
			if len(enc)-2 > 64+truncMarkerMax {
				t.Errorf("JSON form %d bytes, want at most %d: %s", len(enc)-2, 64+truncMarkerMax, enc)
			}
			if tc.cut && !strings.HasSuffix(got, " bytes)") {
				t.Errorf("no truncation marker: %q", got)
			}
		})
	}
	if got := bound(strings.Repeat("a", 100), 64); got != strings.Repeat("a", 64)+"…(truncated 36 bytes)" {
		t.Errorf("marker %q", got)
	}
}

// TestAuditRecordBounded: a record whose node-supplied strings are
// megabytes long (the bug: written whole, 310 MB of audit log in 15 s)
// is one valid JSON line within MaxAuditRecord.
func TestAuditRecordBounded(t *testing.T) {
	a := newMemAudit(t, quiet, nil)
	huge := strings.Repeat("\x01x", 1<<20)
	rec := &AuditRecord{Time: time.Now(), Route: huge, Client: huge, Node: huge, Method: huge,
		API:    oci.API{Kind: oci.Kind(huge), Repository: huge, Reference: huge},
		Digest: huge, Cache: huge, Upstream: huge, Error: huge}
	a.log.Write(rec)
	a.wait(t, 1)
	line := a.sink.lines()[0]
	if len(line)+1 > MaxAuditRecord {
		t.Errorf("record of %d bytes, want at most MaxAuditRecord = %d", len(line)+1, MaxAuditRecord)
	}
	if l := parseAuditLine(t, line); !strings.HasSuffix(l.Repository, "bytes)") || !strings.HasSuffix(l.Error, "bytes)") {
		t.Errorf("repository %q, error %q: want truncation markers", l.Repository, l.Error)
	}
}

func refusalRecord(client string, i int) *AuditRecord {
	rec := sampleRecord("registry", i)
	rec.Client, rec.Status, rec.Refusal, rec.Error = client, 421, "host", "refused: Host does not match"
	return rec
}

// TestAuditRefusalsAggregated: a client repeating a refused request gets
// its first refusal written, the rest of the window held back, and one
// record at the window's end that says how many were; another client's
// refusals and every other record are written as they come.
func TestAuditRefusalsAggregated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := newLineSink()
		a := newMemAuditQueue(t, quiet, nil, DefaultAuditQueue, sink)
		for i := range 1000 {
			a.log.Write(refusalRecord("10.0.0.66:"+strconv.Itoa(40000+i), i))
		}
		a.log.Write(refusalRecord("10.0.0.21:5000", 0))
		a.log.Write(sampleRecord("registry", 7))
		synctest.Wait()
		if n := len(sink.lines()); n != 3 {
			t.Fatalf("%d records during the window, want 3 (first refusal of each client, the pull):\n%s", n, strings.Join(sink.lines(), "\n"))
		}
		time.Sleep(DefaultAuditRefusalWindow + DefaultAuditRefusalWindow/4) // the bubble's clock
		synctest.Wait()
		lines := sink.lines()
		if len(lines) != 4 {
			t.Fatalf("%d records after the window, want 4:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		last := parseAuditLine(t, lines[3])
		if last.Client != "10.0.0.66:40999" || last.Suppressed != 998 || last.Bytes != 1234+999 {
			t.Errorf("summary %+v: want the last refusal, client 10.0.0.66:40999, suppressed 998", last)
		}
		a.log.Write(refusalRecord("10.0.0.66:41000", 0)) // a new window
		synctest.Wait()
		if n := len(sink.lines()); n != 5 {
			t.Errorf("%d records, want 5: the next window's first refusal written at once", n)
		}
	})
}

// TestAuditRefusalsFlushedOnClose: closing the file writes the held
// summaries.
func TestAuditRefusalsFlushedOnClose(t *testing.T) {
	sink := newLineSink()
	f := startAudit("mem", fixedWriter{sink}, 16, quiet, nil)
	f.refs = 1
	a := &AuditLog{f: f}
	for i := range 3 {
		a.Write(refusalRecord("10.0.0.66:1", i))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lines := sink.lines()
	if len(lines) != 2 || parseAuditLine(t, lines[1]).Suppressed != 1 {
		t.Errorf("records %q, want the first and a summary with suppressed 1", lines)
	}
}
