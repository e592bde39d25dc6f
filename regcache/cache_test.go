package regcache

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
)

func TestOpenConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no dir", cfg: Config{MaxSize: 1}, want: "Config.Dir is empty"},
		{name: "no max size", cfg: Config{Dir: t.TempDir()}, want: "Config.MaxSize is 0"},
		{name: "negative max size", cfg: Config{Dir: t.TempDir(), MaxSize: -5}, want: "Config.MaxSize is -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Open(tt.cfg)
			if err == nil {
				c.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open error = %q, want it to say %q", err, tt.want)
			}
		})
	}
}

// TestOpenRefusesDirInUse: a second Cache on one directory (a second
// process, a reload that opened it again) is refused; after Close the
// directory can be opened again.
func TestOpenRefusesDirInUse(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir, 1<<20)
	_, err := Open(Config{Dir: dir, MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, errLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open error = %v, want it refused, naming the directory", err)
	}
	c.Close()
	openTest(t, dir, 1<<20)
}

// TestCloseFailsFillsInFlight: Close ends the fills in flight (their
// readers get an error, nothing is stored) and waits for them; Fill after
// Close bypasses; stored content already open stays readable.
func TestCloseFailsFillsInFlight(t *testing.T) {
	c := openTest(t, "", 1<<20)
	done := &upstream{b: newBlob(1000, 60)}
	fillAndRead(t, c, done)
	hit, ok := c.Get(t.Context(), done.b.digest)
	if !ok {
		t.Fatal("not stored")
	}
	defer hit.Close()
	stalled := newBlob(1000, 61)
	e, err := c.Fill(t.Context(), stalled.digest, func(ctx context.Context) (Fetched, error) {
		return Fetched{Body: stalledBody{ctx}, Size: 1000}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := readAll(e); !errors.Is(err, ErrFillFailed) || !errors.Is(err, ErrClosed) {
		t.Fatalf("reader of a fill cut by Close: %v, want ErrFillFailed and ErrClosed", err)
	}
	if _, err := c.Fill(t.Context(), done.b.digest, done.fetch); !errors.Is(err, ErrBypass) {
		t.Fatalf("Fill after Close: %v, want ErrBypass", err)
	}
	if data, err := readAll(hit); err != nil || len(data) != 1000 {
		t.Fatalf("stored content open before Close: %d bytes, %v", len(data), err)
	}
}

// stalledBody blocks until ctx ends, like the body of an HTTP request
// made with ctx whose upstream went quiet.
type stalledBody struct{ ctx context.Context }

func (b stalledBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}
func (stalledBody) Close() error { return nil }

// TestFillIdleTimeout: a fill whose upstream sends nothing for
// FillIdleTimeout fails (its readers get an error saying so), so that a
// stalled upstream does not hold the digest; the next Fill fetches again.
func TestFillIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := Open(Config{Dir: t.TempDir(), MaxSize: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := newBlob(1000, 62)
		fetches := 0
		fetch := func(ctx context.Context) (Fetched, error) {
			fetches++
			return Fetched{Body: stalledBody{ctx}, Size: 1000}, nil
		}
		e, err := c.Fill(t.Context(), b.digest, fetch)
		if err != nil {
			t.Fatal(err)
		}
		_, err = readAll(e) // time moves on only while everything waits
		if !errors.Is(err, ErrFillFailed) || !strings.Contains(err.Error(), "no byte from upstream for 1m0s") {
			t.Fatalf("reader of a stalled fill: %v, want it failed for the idle timeout", err)
		}
		synctest.Wait()
		e, err = c.Fill(t.Context(), b.digest, fetch)
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if fetches != 2 {
			t.Fatalf("%d fetches, want 2", fetches)
		}
	})
}
