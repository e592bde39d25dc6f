//go:build !linux

package dnsresponder

// batching says whether readBatches exists: not on this platform.
const batching = false

func (u *udpServer) readBatches() error { return u.readEach() }
