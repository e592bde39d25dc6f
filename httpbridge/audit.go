package httpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/snigate/snigate/internal/logfile"
	"github.com/snigate/snigate/internal/ratelog"
	"github.com/snigate/snigate/oci"
)

// DefaultAuditQueue is how many records wait for the writer of one audit
// file; beyond it records are dropped (counted), never waited for.
const DefaultAuditQueue = 8192

// auditBatch bounds the bytes gathered into one write.
const auditBatch = 64 << 10

// AuditRecord is one request in the audit log (docs/configuration.md,
// `routes[].http.audit_log`).
type AuditRecord struct {
	Time     time.Time // when the request arrived
	Route    string
	Client   string // the node's ip:port
	Node     string // the node's identity, "" without one
	Method   string
	API      oci.API       // repository, kind, reference, digest from the path
	Digest   string        // the path's digest, else the response's Docker-Content-Digest
	Status   int           // the status answered; 0: none (the node left first)
	Bytes    int64         // response body bytes written to the node
	Duration time.Duration // until the answer ended
	Cache    string        // hit, miss, bypass, offline; "" without a cache
	// Signature is the signature policy's result (verified, unsigned,
	// invalid, skipped, error); "" without routes[].http.verify.
	Signature string
	Upstream  string // the upstream that answered, "" if none did
	Error     string // what went wrong, "" when nothing did
	// Auth says whose credentials the request used: AuthGateway (an
	// auth route), AuthNode (the node sent an Authorization) or AuthNone.
	Auth string
	// Refusal is the policy's reason (host, method, repository) when
	// the gateway refused the request itself: such records are
	// aggregated per client (DefaultAuditRefusalWindow). "": not refused.
	Refusal string
	// Conn names the node connection as its connection log line's
	// `conn` does, "" for the gateway's own requests.
	Conn string
}

// auditLine is the record's JSON form, fields in the contract's order.
type auditLine struct {
	Time       string   `json:"time"`
	Route      string   `json:"route"`
	Client     string   `json:"client"`
	Node       string   `json:"node"`
	Method     string   `json:"method"`
	Repository string   `json:"repository"`
	Kind       oci.Kind `json:"kind"`
	Reference  string   `json:"reference"`
	From       string   `json:"from,omitempty"` // a blob mount's source repository
	Digest     string   `json:"digest"`
	Status     int      `json:"status"`
	Bytes      int64    `json:"bytes"`
	DurationMS float64  `json:"duration_ms"`
	Cache      string   `json:"cache"`
	Signature  string   `json:"signature"`
	Upstream   string   `json:"upstream"`
	Error      string   `json:"error"`
	Auth       string   `json:"auth"` // gateway, node or ""
	// Conn joins the record to its connection's log line (`conn`).
	Conn string `json:"conn,omitempty"`
	// Suppressed: how many more refusals of the same client, route and
	// reason were counted, not written, since the previous record for
	// them (DefaultAuditRefusalWindow).
	Suppressed int `json:"suppressed,omitempty"`

	at time.Time // the record's Time, formatted into Time by the writer (final)
}

// line is the record's JSON form, every string within its bound
// (MaxAuditField, MaxAuditError).
func (r *AuditRecord) line() auditLine {
	return auditLine{
		at: r.Time, Route: r.Route, Client: r.Client, Node: r.Node,
		Method: r.Method, Repository: r.API.Repository, Kind: r.API.Kind, Reference: r.API.Reference, From: r.API.From,
		Digest: r.Digest, Status: r.Status, Bytes: r.Bytes,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Cache: r.Cache, Signature: r.Signature, Upstream: r.Upstream, Error: r.Error,
		Auth: r.Auth, Conn: r.Conn,
	}.bounded()
}

// auditWriter is what an audit file's writer writes to: a
// *logfile.File (the access log's reopenable file), or a fixedWriter
// (standard output, a test's sink). Reopen opens the path again; when it
// fails the file in use stays.
type auditWriter interface {
	io.WriteCloser
	Reopen() error
}

var _ auditWriter = (*logfile.File)(nil)

// openAuditFile opens path ("-": standard output) for appending.
func openAuditFile(path string) (auditWriter, error) {
	if path == "-" {
		return fixedWriter{os.Stdout}, nil
	}
	f, err := logfile.Open(path)
	if err != nil {
		return nil, auditOpenError(err)
	}
	return f, nil
}

func auditOpenError(err error) error {
	return fmt.Errorf("audit_log: %w: check that the directory exists and is writable by snigate", err)
}

// fixedWriter is an auditWriter that is never reopened nor closed.
type fixedWriter struct{ io.Writer }

func (fixedWriter) Close() error  { return nil }
func (fixedWriter) Reopen() error { return nil }

// Write queues rec for the writer; when the queue is full the record is
// dropped and counted (snigate_http_audit_dropped_total{reason="queue_full"}).
// A refusal (rec.Refusal set) repeated by its client within
// DefaultAuditRefusalWindow is held back and counted instead, and the
// window's last one is written at its end with the count.
func (a *AuditLog) Write(rec *AuditRecord) {
	if a == nil {
		return
	}
	l := rec.line()
	if rec.Refusal != "" {
		write, summary := a.f.refusals.admit(l, rec.Refusal, time.Now())
		if summary != nil {
			a.f.enqueue(*summary)
		}
		if !write {
			return
		}
	}
	a.f.enqueue(l)
}

// Reopen makes the writer close and reopen the file (logrotate, SIGHUP,
// reload); it returns at once. On failure the writer logs it and goes on
// with the old file.
func (a *AuditLog) Reopen() {
	if a == nil {
		return
	}
	select {
	case a.f.reopen <- struct{}{}:
	default:
	}
}

// auditFile is the writer of one file: a goroutine fed by a bounded
// queue, so that a slow disk never stalls a request.
type auditFile struct {
	path   string
	log    *slog.Logger
	m      *Metrics
	refMu  sync.Mutex
	refs   int // handles on the file (auditfiles.go); 0: stopped or stopping
	queue  chan auditLine
	reopen chan struct{}
	quit   chan struct{}
	done   chan struct{}
	err    error // the last close's, read after done
	w      auditWriter
	buf    bytes.Buffer
	enc    *json.Encoder
	warn   ratelog.Limiter
	// refusals holds back repeated refusals; the writer writes the
	// summaries of the windows that end.
	refusals *refusalAggregator
}

// startAudit starts the writer of w, the file at path.
func startAudit(path string, w auditWriter, queue int, log *slog.Logger, m *Metrics) *auditFile {
	if log == nil {
		log = slog.Default()
	}
	f := &auditFile{
		path: path, log: log, m: m, w: w,
		queue: make(chan auditLine, queue), reopen: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
		refusals: newRefusalAggregator(DefaultAuditRefusalWindow),
	}
	f.enc = json.NewEncoder(&f.buf)
	f.enc.SetEscapeHTML(false)
	go f.run()
	return f
}

func (f *auditFile) enqueue(l auditLine) {
	select {
	case f.queue <- l:
	default:
		f.m.drop(DropQueueFull)
		f.warn.Log(f.log, slog.LevelWarn, DropQueueFull, "audit record dropped: the writer is behind (slow disk?)",
			"audit_log", f.path, "reason", DropQueueFull)
	}
}

// run writes queued records until stop, then what is left. A pending
// reopen goes first, so records written after Reopen returned land in
// the new file.
func (f *auditFile) run() {
	defer close(f.done)
	sweep := time.NewTicker(f.refusals.window / 4)
	defer sweep.Stop()
	for {
		select {
		case <-f.reopen:
			f.reopenFile()
			continue
		default:
		}
		select {
		case <-f.reopen:
			f.reopenFile()
		case l := <-f.queue:
			f.writeBatch(l)
		case now := <-sweep.C:
			f.writeSummaries(f.refusals.sweep(now))
		case <-f.quit:
			f.drainQueue()
			return
		}
	}
}

// drainQueue writes what is queued (after a pending reopen) and closes
// the file.
func (f *auditFile) drainQueue() {
	select {
	case <-f.reopen:
		f.reopenFile()
	default:
	}
	for {
		select {
		case l := <-f.queue:
			f.writeBatch(l)
		default:
			f.writeSummaries(f.refusals.flush())
			f.err = f.w.Close()
			return
		}
	}
}

// writeSummaries writes the records that end refusal windows.
func (f *auditFile) writeSummaries(lines []auditLine) {
	for _, l := range lines {
		f.writeBatch(l)
	}
}

// writeBatch writes l and whatever else is queued, up to auditBatch
// bytes, in one write: whole lines, never interleaved.
func (f *auditFile) writeBatch(l auditLine) {
	f.buf.Reset()
	n := 0
	for {
		_ = f.enc.Encode(l.final()) // a struct of strings and numbers always encodes
		n++
		if f.buf.Len() >= auditBatch || len(f.reopen) > 0 {
			break
		}
		var ok bool
		select {
		case l, ok = <-f.queue:
		default:
		}
		if !ok {
			break
		}
	}
	if _, err := f.w.Write(f.buf.Bytes()); err != nil {
		for range n {
			f.m.drop(DropWriteError)
		}
		f.warn.Log(f.log, slog.LevelError, DropWriteError, "audit records dropped: writing the audit log failed",
			"audit_log", f.path, "reason", DropWriteError, "records", n, "err", err)
	}
}

// reopenFile opens the file's path again (after logrotate renamed it).
func (f *auditFile) reopenFile() {
	if err := f.w.Reopen(); err != nil {
		f.log.Error("audit log not reopened; still writing to the old file", "audit_log", f.path, "err", auditOpenError(err))
	}
}

// stop ends the writer once the queue is written and waits for it.
func (f *auditFile) stop() error {
	close(f.quit)
	<-f.done
	return f.err
}
