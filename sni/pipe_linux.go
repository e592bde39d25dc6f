package sni

import (
	"os"

	"github.com/snigate/snigate/internal/rawnet"
)

// pipe is a kernel pipe that splices bytes from one socket to another; n
// bytes are in it.
type pipe struct {
	r, w int
	n    int
}

// pipePoolSize bounds the idle pipes a server keeps: enough for the
// directions moving bytes at one instant on a few cores; more are closed
// when returned.
const pipePoolSize = 32

// pipeSize is the capacity asked for each pipe (F_SETPIPE_SZ): one splice
// chunk.
const pipeSize = spliceChunk

// pipePool lends pipes to spliced directions while bytes are in flight, so
// that an idle tunnel holds none.
type pipePool struct{ free chan *pipe }

func newPipePool() *pipePool { return &pipePool{free: make(chan *pipe, pipePoolSize)} }

// get returns an empty pipe, from the pool or new.
func (pp *pipePool) get() (*pipe, error) {
	select {
	case p := <-pp.free:
		return p, nil
	default:
	}
	r, w, err := rawnet.Pipe(pipeSize) // a smaller pipe (the user's quota) still works
	if err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	return &pipe{r: r, w: w}, nil
}

// put returns p: an empty pipe goes back to the pool (or is closed when
// the pool is full), one still holding bytes is closed.
func (pp *pipePool) put(p *pipe) {
	if p.n == 0 {
		select {
		case pp.free <- p:
			return
		default:
		}
	}
	p.close()
}

// close closes the pooled pipes; call it once no tunnel runs.
func (pp *pipePool) close() {
	for {
		select {
		case p := <-pp.free:
			p.close()
		default:
			return
		}
	}
}

func (p *pipe) close() {
	rawnet.Close(p.r)
	rawnet.Close(p.w)
}
