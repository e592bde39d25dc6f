package sni

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loop's hot system calls, on non-blocking descriptors only:
// RawSyscall skips the runtime's entersyscall/exitsyscall bookkeeping,
// which a call that never blocks does not need. Errors are unix.Errno.

func rawSplice(in, out, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawRead(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawWrite(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawShutdownWrite(fd int) {
	unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0)
}

func rawClose(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}
