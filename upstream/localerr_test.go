package upstream

import (
	"context"
	"github.com/snigate/snigate/internal/testkit"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestOutOfDescriptorsIsNotAnUpstreamFailure is the regression test of a
// gateway that ran out of file descriptors: every check failed with
// EMFILE, every upstream of every route went down and stayed down for
// rise x interval after the descriptors came back. A check that cannot
// run for lack of a local resource now leaves the upstream's health as it
// was, is counted as local_error and logged (rate-limited); a real
// failure still takes it down.
func TestOutOfDescriptorsIsNotAnUpstreamFailure(t *testing.T) {
	u := startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	var fail atomic.Value // error to return from the dial, or nil
	var logs testkit.LogSink
	p := mustPool(t, Config{
		Addrs:  []string{u.addr},
		Check:  Check{Kind: CheckTCP, Fall: 1, Rise: 1},
		Logger: logs.Logger(),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if err, _ := fail.Load().(error); err != nil {
				return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("socket", err)}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		fail.Store(error(errno))
		rounds(p, 3)
		if st := p.Status()[0]; !st.Healthy {
			t.Fatalf("%v: the upstream went down for a local failure: %s", errno, st.LastError)
		}
	}
	lines := logs.Lines("health check could not run")
	if len(lines) != 1 {
		t.Fatalf("%d Error lines for 6 local failures within %v, want 1", len(lines), localErrorLogEvery)
	}
	if !strings.Contains(lines[0], "too many open files") {
		t.Errorf("the log line does not carry the error: %s", lines[0])
	}
	fail.Store(error(syscall.ECONNREFUSED))
	rounds(p, 1)
	if st := p.Status()[0]; st.Healthy {
		t.Fatal("a refused connection did not take the upstream down")
	}
}
