package httpbridge

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/http2"
)

// Limits of the node side's HTTP/2 connections against rapid reset
// (CVE-2023-44487: a client opening streams and resetting them at once,
// so that each costs the gateway a request to the registry but never
// counts against the streams in flight).
const (
	// DefaultMaxConcurrentStreams is the streams a node may have open on
	// one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS): requests
	// in flight per connection.
	DefaultMaxConcurrentStreams = 100
	// DefaultResetFloodMin is the streams a node may reset on one
	// connection before DefaultResetFloodRatio is applied: a client
	// cancelling a few pulls is never cut.
	DefaultResetFloodMin = 100
	// DefaultResetFloodRatio: beyond DefaultResetFloodMin resets, the
	// connection ends (GOAWAY ENHANCE_YOUR_CALM) once more than one in
	// DefaultResetFloodRatio of the streams it opened were reset by the
	// node.
	DefaultResetFloodRatio = 2
	// DefaultResetFloodWindow bounds the memory of the counts: once a
	// connection opened this many streams, both counts are halved, so a
	// long-lived connection is judged on its recent streams.
	DefaultResetFloodWindow = 1000
)

// errResetFlood is what the node connection's Read returns once the node
// has reset most of its streams. x/net/http2 answers a ConnectionError
// from its frame reader with a GOAWAY of that code and closes the
// connection (were it to treat it as any read error, it would close the
// connection without the GOAWAY); it reads no frame after it.
var errResetFlood error = http2.ConnectionError(http2.ErrCodeEnhanceYourCalm)

// resetGuard watches the frames a node sends on an HTTP/2 connection,
// as the bytes pass to the server (it parses only the 9-byte frame
// headers), counting the streams the node opens and those it resets.
type resetGuard struct {
	preface int          // bytes of the client preface still to pass
	hdr     [9]byte      // the frame header being read
	have    int          // bytes of hdr read
	skip    uint32       // payload bytes of the current frame still to pass
	maxID   uint32       // the highest stream the node opened
	streams int          // streams opened (halved every window)
	resets  int          // RST_STREAM frames (halved with streams)
	tripped bool         // the node flooded: no more bytes pass
	flood   func(string) // called once when tripped, with the counts
}

func newResetGuard(flood func(string)) *resetGuard {
	return &resetGuard{preface: len(http2.ClientPreface), flood: flood}
}

// pass returns how many bytes of b, read from the node, the server may
// have: all of them, or those before the frame that tripped the guard.
func (g *resetGuard) pass(b []byte) int {
	for i := 0; i < len(b); {
		switch {
		case g.tripped:
			return i
		case g.preface > 0:
			n := min(g.preface, len(b)-i)
			g.preface -= n
			i += n
		case g.skip > 0:
			n := int(min(g.skip, uint32(len(b)-i)))
			g.skip -= uint32(n)
			i += n
		default:
			start := i - g.have
			n := copy(g.hdr[g.have:], b[i:])
			g.have += n
			i += n
			if g.have == len(g.hdr) && g.frame() {
				return max(start, 0)
			}
		}
	}
	return len(b)
}

// frame counts the frame whose header is complete in hdr; true when it
// trips the guard.
func (g *resetGuard) frame() bool {
	g.have = 0
	g.skip = uint32(g.hdr[0])<<16 | uint32(g.hdr[1])<<8 | uint32(g.hdr[2])
	id := binary.BigEndian.Uint32(g.hdr[5:9]) & (1<<31 - 1)
	switch http2.FrameType(g.hdr[3]) {
	case http2.FrameHeaders:
		if id > g.maxID && id%2 == 1 {
			g.maxID = id
			g.streams++
		}
	case http2.FrameRSTStream:
		g.resets++
	default:
		return false
	}
	if g.resets >= DefaultResetFloodMin && g.resets*DefaultResetFloodRatio > g.streams {
		g.tripped = true
		g.flood(fmt.Sprintf("%d of the last %d streams", g.resets, g.streams))
		return true
	}
	if g.streams >= DefaultResetFloodWindow {
		g.streams, g.resets = g.streams/2, g.resets/2
	}
	return false
}
