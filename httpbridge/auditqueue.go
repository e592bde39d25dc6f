package httpbridge

// The audit queue: a request's record goes to its file's writer as an
// auditLine (AuditLog.Write, auditFile.enqueue), a bounded channel that
// never blocks the request; the writer (auditFile.run) encodes the lines
// it takes, in the order they were queued, into whole-line batches, and
// writes what is queued before the last handle's Close returns. What
// stays on the request path is what bounds the memory the queue holds:
// every string is cut to its bound (auditLine.bounded) before it is
// queued, so a full queue of records quoting a long path holds no more
// than DefaultAuditQueue bounded lines. Formatting the time, like the
// JSON encoding, is the writer's (final).

// auditTimeFormat is the audit record's time: UTC, milliseconds.
const auditTimeFormat = "2006-01-02T15:04:05.000Z07:00"

// final is l as the writer writes it: the record's time formatted (a
// line built with Time already set keeps it).
func (l auditLine) final() auditLine {
	if !l.at.IsZero() {
		l.Time = l.at.UTC().Format(auditTimeFormat)
	}
	return l
}
