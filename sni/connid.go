package sni

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
)

// connIDs names a server's connections: the `conn` of the connection log
// line, and BridgeConn.ID, which a handler writes into its own records
// (the HTTP bridge's audit log) so that the two logs join. An ID is a
// per-process random prefix and a sequence number, "3f9a1c07-42": unique
// within the process, and across restarts and upgrades with high
// probability. A connection gets its number when it is first asked for
// one, so connections that never log cost nothing.
type connIDs struct {
	prefix string
	next   atomic.Uint64
}

func newConnIDs() *connIDs {
	var b [4]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return &connIDs{prefix: hex.EncodeToString(b[:])}
}

// of returns ss's ID, assigning it on the first call.
func (ids *connIDs) of(ss *session) string {
	n := ss.id.Load()
	if n == 0 {
		ss.id.CompareAndSwap(0, ids.next.Add(1))
		n = ss.id.Load()
	}
	return ids.prefix + "-" + strconv.FormatUint(n, 10)
}

// maxUpstreamsNamed bounds the upstreams a handler route's connection
// line names (a route has a handful; a pool rotating through more is
// summarised as "+N").
const maxUpstreamsNamed = 8

// usedUpstream records that a handler's request on ss went to addr, for
// the connection line's upstream.
func (ss *session) usedUpstream(addr string) {
	if addr == "" {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, a := range ss.handlerUpstreams {
		if a == addr {
			return
		}
	}
	if len(ss.handlerUpstreams) < maxUpstreamsNamed {
		ss.handlerUpstreams = append(ss.handlerUpstreams, addr)
	} else {
		ss.moreUpstreams++
	}
}

// upstreamString is the connection line's upstream: the one dialed, or
// those a handler's requests used, comma-separated.
func (ss *session) upstreamString() string {
	if ss.upstream != "" {
		return ss.upstream
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := strings.Join(ss.handlerUpstreams, ",")
	if ss.moreUpstreams > 0 {
		s += ",+" + strconv.Itoa(ss.moreUpstreams)
	}
	return s
}
