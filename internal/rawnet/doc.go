// Package rawnet holds the raw Linux system calls of snigate's event loop
// (sni/loop_linux.go) and the goroutine path's raw dial, and the sockaddr
// conversions they need: epoll, eventfd, accept4, socket and connect,
// read, write, writev, splice, pipes, shutdown, close, fcntl flags,
// SO_ERROR and getsockname. The code above it reads like the portable
// path; everything with unsafe or a system call number is here, with a
// test per call.
//
// The calls work on non-blocking descriptors only and use RawSyscall,
// which skips the runtime's entersyscall/exitsyscall bookkeeping that a
// call that never blocks does not need, and keeps the caller's P: a
// loopback connect(2) or close(2) runs the peer's TCP processing too and
// can take tens of microseconds, and with Syscall the runtime's sysmon
// took the P away from such calls (measured with perf: a sixth of
// snigate's samples were task switches). The one exception is Accept4 on
// a listening socket, whose open file description is shared (with the
// runtime's listener, with the new process of a hand-over): anyone can
// clear its O_NONBLOCK, and accept4 then blocks, so it goes through
// Syscall, and callers check the flag first (EnsureNonblock).
//
// Errors are syscall.Errno values (unix.Errno), unwrapped: callers compare
// them with EAGAIN and EINTR and wrap the rest with os.NewSyscallError.
//
// Conversions are endian-neutral, as golang.org/x/sys/unix writes them: a
// sockaddr's port is network byte order in memory, written and read byte
// by byte, so they are right on big-endian hosts (s390x, ppc64) too.
// Epoll tokens round-trip through the event's data field whatever its
// alignment on the architecture.
//
// Usage:
//
//	sa, _ := rawnet.SockaddrOf(netip.MustParseAddrPort("127.0.0.1:443"))
//	fd, op, err := rawnet.SocketConnect(&sa) // in progress: wait for EPOLLOUT
//	if err != nil {
//		return os.NewSyscallError(op, err)
//	}
//	defer rawnet.Close(fd)
//
// On systems other than Linux the package is empty.
package rawnet
