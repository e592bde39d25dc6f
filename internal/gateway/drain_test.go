package gateway

import (
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/testkit"
	"os"
	"testing"
	"time"
)

// TestDrainLetsTransfersFinish: on stop, /readyz turns 503 at once, new
// connections are refused, a running transfer completes, and Run returns
// nil once it has.
func TestDrainLetsTransfersFinish(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "1m", spliceRoute("a", "a.test", a.addr())))
	w.start()
	if code, _ := w.adminGet("/readyz"); code != 200 {
		t.Fatalf("/readyz = %d before the drain, want 200", code)
	}
	tunnel, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatal(err)
	}
	echoRoundTrip(t, tunnel, "before")

	w.cancel() // as SIGTERM does
	testkit.Poll(t, "/readyz to report 503", func() bool { code, _ := w.adminGet("/readyz"); return code == 503 })
	testkit.Poll(t, "the TLS listener to close", func() bool {
		c, err := w.dialTLS("a.test")
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	echoRoundTrip(t, tunnel, "the transfer goes on while draining")
	select {
	case <-w.done:
		t.Fatal("Run returned while a tunnel was still open")
	default:
	}
	tunnel.Close()
	<-w.done
	if w.runErr != nil {
		t.Errorf("Run = %v, want nil after a drain", w.runErr)
	}
}

// TestDrainBudgetClosesStragglers: a tunnel still open when timeouts.drain
// runs out is closed, and Run still returns nil.
func TestDrainBudgetClosesStragglers(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "100ms", spliceRoute("a", "a.test", a.addr())))
	w.start()
	tunnel, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatal(err)
	}
	defer tunnel.Close()
	echoRoundTrip(t, tunnel, "idle from now on")
	w.cancel()
	<-w.done
	if w.runErr != nil {
		t.Errorf("Run = %v, want nil", w.runErr)
	}
	tunnel.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tunnel.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read on a straggler after the drain budget: %v, want the tunnel closed", err)
	}
}
