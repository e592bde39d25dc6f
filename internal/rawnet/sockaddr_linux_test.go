package rawnet

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// portBytes returns the two bytes of sa's port field as they lie in
// memory, which is what the kernel reads: right after sa_family, in both
// families.
func portBytes(sa *Sockaddr) [2]byte {
	return *(*[2]byte)(unsafe.Add(unsafe.Pointer(&sa.any), 2))
}

// Regression: the port was stored as the uint16 value port>>8|port<<8,
// which lies in memory in network order only on a little-endian host; on
// s390x and ppc64 the kernel read the bytes swapped and the loop
// connected to the wrong port (0x1234 became 0x3412). The port is now
// written byte by byte; the bytes the kernel reads are checked against
// the layout written by hand, and read back.
func TestSockaddrPortIsNetworkOrder(t *testing.T) {
	tests := []struct {
		name   string
		ap     string
		family int
		want   [2]byte
	}{
		{name: "ipv4", ap: "127.0.0.1:4660", family: unix.AF_INET, want: [2]byte{0x12, 0x34}},
		{name: "ipv6", ap: "[::1]:4660", family: unix.AF_INET6, want: [2]byte{0x12, 0x34}},
		{name: "mapped", ap: "[::ffff:127.0.0.1]:443", family: unix.AF_INET, want: [2]byte{0x01, 0xbb}},
		{name: "high", ap: "10.0.0.1:65534", family: unix.AF_INET, want: [2]byte{0xff, 0xfe}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ap := netip.MustParseAddrPort(tc.ap)
			sa, err := SockaddrOf(ap)
			if err != nil {
				t.Fatal(err)
			}
			if sa.Family() != tc.family {
				t.Errorf("family %d, want %d", sa.Family(), tc.family)
			}
			if got := portBytes(&sa); got != tc.want {
				t.Errorf("port bytes %#x, want %#x", got, tc.want)
			}
			back, ok := sa.AddrPort()
			want := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			if !ok || back != want {
				t.Errorf("AddrPort() = %v, %v; want %v", back, ok, want)
			}
		})
	}
}

// The old expression, stored as a uint16 in each byte order: right on a
// little-endian host only. The byte-by-byte form gives network order in
// both, which is what TestSockaddrPortIsNetworkOrder checks on the host.
func TestOldPortSwapWrongOnBigEndian(t *testing.T) {
	var p uint16 = 0x1234
	want := [2]byte{0x12, 0x34}
	old := p>>8 | p<<8 // what newRawSockaddr stored
	var le, be [2]byte
	binary.LittleEndian.PutUint16(le[:], old)
	binary.BigEndian.PutUint16(be[:], old)
	if le != want {
		t.Errorf("old expression on little-endian: %#x, want %#x", le, want)
	}
	if be == want {
		t.Errorf("old expression on big-endian: %#x, want it to differ from %#x (the bug)", be, want)
	}
	var field uint16
	putPort(&field, p)
	if got := *(*[2]byte)(unsafe.Pointer(&field)); got != want {
		t.Errorf("putPort: %#x, want %#x", got, want)
	}
	if got := port(&field); got != p {
		t.Errorf("port() read back %#x, want %#x", got, p)
	}
}

func TestSockaddrRejectsInvalid(t *testing.T) {
	if _, err := SockaddrOf(netip.AddrPort{}); err == nil {
		t.Fatal("SockaddrOf(zero) = nil error, want one")
	}
	var sa Sockaddr
	if _, ok := sa.AddrPort(); ok {
		t.Error("zero Sockaddr: AddrPort ok, want false")
	}
	if a := sa.TCPAddr(); a.IP != nil || a.Port != 0 {
		t.Errorf("zero Sockaddr: TCPAddr %v, want empty", a)
	}
}

func TestSockaddrScopeBecomesZone(t *testing.T) {
	sa, _ := SockaddrOf(netip.MustParseAddrPort("[fe80::1]:80"))
	(*unix.RawSockaddrInet6)(unsafe.Pointer(&sa.any)).Scope_id = 1 // lo
	ap, ok := sa.AddrPort()
	if !ok || ap.Addr().Zone() == "" || ap.Port() != 80 {
		t.Fatalf("AddrPort() = %v, %v; want fe80::1 with a zone, port 80", ap, ok)
	}
	if ta := sa.TCPAddr(); ta.Zone != ap.Addr().Zone() || len(ta.IP) != 16 {
		t.Errorf("TCPAddr() = %#v, want zone %q and 16 bytes", ta, ap.Addr().Zone())
	}
}
