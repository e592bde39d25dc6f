package dnsresponder

import (
	"net/netip"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batching says whether readBatches exists: on Linux, with recvmmsg and
// sendmmsg.
const batching = true

// batchSize is the most datagrams read (and replies written) per system
// call.
const batchSize = 32

// mmsghdr is the kernel's struct mmsghdr.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32 // bytes received
}

// batch is one reader's buffers for batchSize datagrams and their
// replies, reused for every batch. A reply goes to the very sockaddr its
// query came from.
type batch struct {
	in     [batchSize]mmsghdr
	inIov  [batchSize]unix.Iovec
	names  [batchSize]unix.RawSockaddrInet6 // holds IPv4 ones too
	bufs   [batchSize][]byte
	oobs   [batchSize][]byte
	out    [batchSize]mmsghdr
	outIov [batchSize]unix.Iovec
	outBuf [batchSize][]byte
	outOOB [batchSize][]byte
	sent   [batchSize]sentReply

	// The system calls, made once so that a batch allocates nothing:
	// recvFn reads into in, sendFn writes out[off:queued]; both set n
	// (messages done) and errno.
	recvFn, sendFn func(fd uintptr) bool
	off, queued, n int
	errno          syscall.Errno
}

// sentReply is a fast-path reply waiting in the batch, to be counted once
// written.
type sentReply struct {
	h     udpHandler
	reply wireReply
	start time.Time
}

func newBatch(pktinfo bool) *batch {
	b := new(batch)
	b.recvFn = func(fd uintptr) bool {
		b.n, b.errno = mmsg(unix.SYS_RECVMMSG, fd, &b.in[0], batchSize)
		return b.errno != unix.EAGAIN
	}
	b.sendFn = func(fd uintptr) bool {
		b.n, b.errno = mmsg(unix.SYS_SENDMMSG, fd, &b.out[b.off], b.queued-b.off)
		return b.errno != unix.EAGAIN
	}
	for i := range batchSize {
		b.bufs[i] = make([]byte, readBufferSize)
		b.inIov[i].Base = &b.bufs[i][0]
		b.inIov[i].SetLen(readBufferSize)
		b.in[i].hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		b.in[i].hdr.Iov = &b.inIov[i]
		b.in[i].hdr.SetIovlen(1)
		b.outBuf[i] = make([]byte, 0, MaxUDPSize)
		b.out[i].hdr.Iov = &b.outIov[i]
		b.out[i].hdr.SetIovlen(1)
		if pktinfo {
			b.oobs[i] = make([]byte, oobSize)
			b.outOOB[i] = make([]byte, 0, oobSize)
		}
	}
	return b
}

// readBatches reads up to batchSize datagrams per recvmmsg, answers them,
// and writes the routed names' replies with one sendmmsg.
func (u *udpServer) readBatches() error {
	raw, err := u.conn.SyscallConn()
	if err != nil {
		return err
	}
	b := newBatch(u.pktinfo)
	for !u.stopping.Load() {
		n, err := b.recv(raw)
		if err != nil {
			return err
		}
		queued := 0
		for i := range n {
			if u.answerIn(b, i, queued) {
				queued++
			}
		}
		u.sendBatch(raw, b, queued)
	}
	return nil
}

// answerIn answers datagram i of the batch, queueing a fast-path reply in
// slot q of the replies (true).
func (u *udpServer) answerIn(b *batch, i, q int) bool {
	m := &b.in[i].hdr
	src := u.source(b.oobs[i][:m.Controllen])
	client := sockaddrAddrPort(&b.names[i])
	start := time.Now()
	h, reply, ok := u.answer(b.outBuf[q], b.bufs[i][:b.in[i].n], client, src)
	if !ok {
		return false
	}
	o := &b.out[q].hdr
	o.Name, o.Namelen = m.Name, m.Namelen
	b.outIov[q].Base = &reply.b[0]
	b.outIov[q].SetLen(len(reply.b))
	o.Control = nil
	o.SetControllen(0)
	if src.IsValid() {
		b.outOOB[q] = appendSourceOOB(b.outOOB[q][:0], src)
		o.Control = &b.outOOB[q][0]
		o.SetControllen(len(b.outOOB[q]))
	}
	b.sent[q] = sentReply{h: h, reply: reply, start: start}
	return true
}

// recv reads up to batchSize datagrams, waiting for the first one.
func (b *batch) recv(raw syscall.RawConn) (int, error) {
	for i := range b.in {
		m := &b.in[i].hdr
		m.Namelen = unix.SizeofSockaddrInet6
		m.Flags = 0
		if b.oobs[i] != nil {
			m.Control = &b.oobs[i][0]
			m.SetControllen(oobSize)
		}
	}
	if err := raw.Read(b.recvFn); err != nil {
		return 0, err
	}
	if b.errno != 0 {
		return 0, b.errno
	}
	return b.n, nil
}

// mmsg calls recvmmsg or sendmmsg on fd for n messages from m, again
// when interrupted.
func mmsg(trap, fd uintptr, m *mmsghdr, n int) (int, syscall.Errno) {
	for {
		r, _, e := unix.Syscall6(trap, fd, uintptr(unsafe.Pointer(m)), uintptr(n), 0, 0, 0)
		if e != unix.EINTR {
			if e != 0 {
				return 0, e
			}
			return int(r), 0
		}
	}
}

// sendBatch writes the n queued replies, then counts them. A reply the
// kernel refuses is logged and skipped; a closed socket drops the rest.
func (u *udpServer) sendBatch(raw syscall.RawConn, b *batch, n int) {
	for b.off, b.queued = 0, n; b.off < n; {
		if err := raw.Write(b.sendFn); err != nil {
			u.s.logger.Debug("dns: write replies", "err", err)
			break
		}
		if b.errno != 0 {
			client := sockaddrAddrPort((*unix.RawSockaddrInet6)(unsafe.Pointer(b.out[b.off].hdr.Name)))
			u.s.logger.Debug("dns: write reply", "client", client.String(), "err", b.errno)
		}
		b.off += max(b.n, 1) // skip the one refused
	}
	for i := range n {
		s := &b.sent[i]
		s.h.wroteWire(s.reply, s.start)
		*s = sentReply{}
	}
}

// sockaddrAddrPort is the address in sa, an IPv4 or IPv6 socket address.
func sockaddrAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	port := uint16(p[0])<<8 | uint16(p[1])
	if sa.Family == unix.AF_INET {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	}
	a := netip.AddrFrom16(sa.Addr)
	if sa.Scope_id != 0 {
		a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
	}
	return netip.AddrPortFrom(a, port)
}
