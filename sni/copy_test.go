package sni

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// pipeTunnel runs a copying tunnel between two in-memory pipes and returns
// the test's ends of them and the tunnel's outcome.
func pipeTunnel(idle time.Duration) (client, upstream net.Conn, result <-chan string) {
	client, gwClient := net.Pipe()
	gwUpstream, upstream := net.Pipe()
	out := make(chan string, 1)
	go func() {
		t := newTunnel(&session{}, gwClient, gwUpstream, idle)
		res, _ := t.run(t.copier(gwClient, gwUpstream, sideClient, sideUpstream, DirectionUpstream).run,
			t.copier(gwUpstream, gwClient, sideUpstream, sideClient, DirectionDownstream).run)
		out <- res
	}()
	return client, upstream, out
}

func TestCopierIdleTimeout(t *testing.T) {
	const idle = time.Minute
	t.Run("idle tunnel closes after exactly the idle timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			client, upstream, result := pipeTunnel(idle)
			defer client.Close()
			defer upstream.Close()
			if res := <-result; res != resultIdle {
				t.Fatalf("result %q, want %q", res, resultIdle)
			}
			if d := time.Since(start); d != idle {
				t.Errorf("closed after %v, want %v", d, idle)
			}
		})
	})
	t.Run("one direction moving keeps the other open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			client, upstream, result := pipeTunnel(idle)
			defer client.Close()
			defer upstream.Close()
			go io.Copy(io.Discard, upstream)
			var last time.Time
			for range 30 { // a byte every 10s for 5 minutes: 5 idle periods
				time.Sleep(10 * time.Second)
				if _, err := client.Write([]byte{1}); err != nil {
					t.Fatalf("tunnel closed while moving: %v", err)
				}
				last = time.Now()
			}
			if res := <-result; res != resultIdle {
				t.Fatalf("result %q, want %q", res, resultIdle)
			}
			if d := time.Since(last); d != idle {
				t.Errorf("closed %v after the last byte, want %v", d, idle)
			}
		})
	})
	t.Run("no idle timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			client, upstream, result := pipeTunnel(-1)
			time.Sleep(24 * time.Hour)
			synctest.Wait()
			select {
			case res := <-result:
				t.Fatalf("tunnel ended (%s) without an idle timeout", res)
			default:
			}
			client.Close()
			upstream.Close()
			<-result
		})
	})
}
