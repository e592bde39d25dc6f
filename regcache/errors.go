package regcache

import (
	"errors"
	"syscall"
)

// ErrBypass is matched (errors.Is) by every error that means "the cache
// cannot help with this request, serve it from upstream": the directory is
// unwritable, the disk is full, or a file could not be read or written;
// or the content does not fit in MaxSize while a fill of it is in flight
// (or while MaxSpills others that do not fit are). Returned before the
// first byte of an Entry it means the caller should fetch from upstream
// itself; from a Read of a filling Entry it means the fill broke (the
// response must fail, never look complete). Each failure of the disk is
// counted in snigate_cache_errors_total and logged at Error, at most every
// faultLogEvery per reason.
var ErrBypass = errors.New("regcache: cache unavailable, bypass it")

// ErrFillFailed is matched by the error every reader of a fill gets when
// the fill failed: the fetch failed, the upstream's body ended early or
// broke, or its bytes do not match the digest. Nothing is stored. The
// error also wraps the cause (the fetch's own error, ErrDigestMismatch,
// ErrBypass).
var ErrFillFailed = errors.New("regcache: fill failed")

// ErrDigestMismatch is matched by the error of a fill whose bytes do not
// hash to the digest (or whose length differs from the announced size).
var ErrDigestMismatch = errors.New("regcache: content does not match its digest")

// ErrClosed is matched by the errors of calls on a closed Cache and of
// reads on a closed Entry.
var ErrClosed = errors.New("regcache: closed")

// Reasons of snigate_cache_errors_total.
const (
	reasonNoSpace    = "nospace"    // ENOSPC, EDQUOT: the disk or a quota is full
	reasonUnwritable = "unwritable" // EACCES, EPERM, EROFS: permissions, a read-only mount
	reasonIO         = "io"         // anything else: EIO, a vanished directory...
)

var faultReasons = [...]string{reasonNoSpace, reasonUnwritable, reasonIO}

// faultReason classifies a filesystem error for snigate_cache_errors_total.
func faultReason(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return reasonNoSpace
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EROFS):
		return reasonUnwritable
	}
	return reasonIO
}
