package rawnet

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Errors callers branch on.
const (
	EAGAIN       = unix.EAGAIN
	EINTR        = unix.EINTR
	EINPROGRESS  = unix.EINPROGRESS
	EALREADY     = unix.EALREADY
	EISCONN      = unix.EISCONN
	ECONNABORTED = unix.ECONNABORTED
	ECONNRESET   = unix.ECONNRESET
	EIO          = unix.EIO
)

// Read is read(2).
func Read(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Write is write(2).
func Write(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Writev writes up to the first two non-empty buffers of bufs in one
// writev(2) and returns the bytes written.
func Writev(fd int, bufs [][]byte) (int, error) {
	var iov [2]unix.Iovec
	n := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if n == len(iov) {
			break
		}
		iov[n].Base = unsafe.SliceData(b)
		iov[n].SetLen(len(b))
		n++
	}
	if n == 0 {
		return 0, nil
	}
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Splice moves up to n bytes from in to out, one of which must be a pipe,
// without blocking (SPLICE_F_NONBLOCK); 0 at end of stream.
func Splice(in, out, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Pipe opens a non-blocking, close-on-exec pipe and asks for size bytes
// of capacity (F_SETPIPE_SZ); a smaller pipe (the user's pipe quota) is no
// error.
func Pipe(size int) (r, w int, err error) {
	var fds [2]int32
	if _, _, e := unix.RawSyscall(unix.SYS_PIPE2, uintptr(unsafe.Pointer(&fds)), unix.O_CLOEXEC|unix.O_NONBLOCK, 0); e != 0 {
		return -1, -1, e
	}
	unix.RawSyscall(unix.SYS_FCNTL, uintptr(fds[1]), unix.F_SETPIPE_SZ, uintptr(size))
	return int(fds[0]), int(fds[1]), nil
}

// ShutdownWrite sends a FIN: shutdown(2) with SHUT_WR.
func ShutdownWrite(fd int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0); e != 0 {
		return e
	}
	return nil
}

// Close is close(2).
func Close(fd int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}

// EnsureNonblock sets O_NONBLOCK on fd when it is clear, and reports
// whether it was clear; fcntl F_GETFL and F_SETFL never block.
func EnsureNonblock(fd int) (bool, error) {
	flags, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_GETFL, 0)
	if e != 0 {
		return false, e
	}
	if flags&unix.O_NONBLOCK != 0 {
		return false, nil
	}
	if _, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETFL, flags|unix.O_NONBLOCK); e != 0 {
		return true, e
	}
	return true, nil
}

// DupCloexec duplicates fd, close-on-exec (F_DUPFD_CLOEXEC).
func DupCloexec(fd int) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_FCNTL, uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
