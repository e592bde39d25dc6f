package admin

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/images"
)

// fakeImages answers as a gateway would.
type fakeImages struct{ warmed []string }

func (f *fakeImages) WarmImages(_ context.Context, refs, _ []string, progress func(images.Progress)) ([]images.Status, error) {
	f.warmed = append(f.warmed, refs...)
	for i := range 3 {
		progress(images.Progress{Image: refs[0], Layers: 2, LayersDone: min(i, 2), Bytes: 2048, BytesDone: int64(i) * 1024, Blob: "sha256:" + strings.Repeat("a", 64)})
	}
	return []images.Status{{Image: refs[0], Route: "registry", Complete: true, Blobs: 2, Bytes: 2048}}, nil
}

func (f *fakeImages) ImageStatus(_ context.Context, refs []string) ([]images.Status, error) {
	return []images.Status{{Image: "registry.example.com/team/app:v1", Route: "registry", Missing: []string{"sha256:" + strings.Repeat("b", 64)}}}, nil
}

func (f *fakeImages) ExportImages(_ context.Context, refs []string, dir string, force bool) (images.LayoutResult, error) {
	if !force {
		return images.LayoutResult{}, errors.New("export to " + dir + ": the directory is not empty")
	}
	return images.LayoutResult{Dir: dir, Blobs: 3}, nil
}

func (f *fakeImages) ImportImages(_ context.Context, dir, _ string) (images.LayoutResult, error) {
	return images.LayoutResult{Dir: dir, Blobs: 3}, nil
}

// TestImagesAPI: warm streams its progress then its result, status,
// export and import answer through the Client `snigate ctl cache` uses,
// and bad bodies are refused before the gateway is asked.
func TestImagesAPI(t *testing.T) {
	f := &fakeImages{}
	_, addr := startServer(t, Config{Images: f}, "127.0.0.1:0")
	c := &Client{Addr: addr}
	var seen []images.Progress
	st, err := c.WarmImages(t.Context(), []string{"registry.example.com/team/app:v1"}, nil, func(p images.Progress) { seen = append(seen, p) })
	if err != nil || len(st) != 1 || !st[0].Complete || len(seen) != 3 {
		t.Fatalf("WarmImages: %+v %v, %d progress lines; want complete after 3", st, err, len(seen))
	}
	if st, err := c.ImageStatus(t.Context(), nil); err != nil || len(st) != 1 || len(st[0].Missing) != 1 {
		t.Fatalf("ImageStatus: %+v %v", st, err)
	}
	var apiErr *APIError
	if _, err := c.ExportImages(t.Context(), []string{"registry.example.com/team/app:v1"}, "/tmp/x", false); !errors.As(err, &apiErr) || apiErr.StatusCode != 409 || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("ExportImages into a non-empty dir: %v, want 409 saying so", err)
	}
	if res, err := c.ImportImages(t.Context(), "/tmp/x", ""); err != nil || res.Blobs != 3 {
		t.Fatalf("ImportImages: %+v %v", res, err)
	}
	tests := []struct {
		name, path, body string
		code             int
	}{
		{name: "warm without images", path: "/api/cache/warm", body: `{"images":[]}`, code: 400},
		{name: "warm without a host", path: "/api/cache/warm", body: `{"images":["team/app:v1"]}`, code: 400},
		{name: "export without dir", path: "/api/cache/export", body: `{"images":["registry.example.com/team/app:v1"]}`, code: 400},
		{name: "import without dir", path: "/api/cache/import", body: `{}`, code: 400},
		{name: "unknown field", path: "/api/cache/status", body: `{"all":true}`, code: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a := call(t, "POST", addr, tt.path, "application/json", tt.body); a.code != tt.code {
				t.Errorf("POST %s %s: %d, want %d", tt.path, tt.body, a.code, tt.code)
			}
		})
	}
	if len(f.warmed) != 1 {
		t.Errorf("the gateway was asked to warm %q, want the one good request", f.warmed)
	}
}

// TestProgressWriter: on a terminal a bar redrawn in place with layers,
// bytes and rate; otherwise a plain line per layer.
func TestProgressWriter(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	clock := at
	p := images.Progress{Image: "registry.example.com/team/app:v1", Digest: "sha256:" + strings.Repeat("c", 64), Layers: 4, Bytes: 4 << 20}
	tests := []struct {
		name     string
		terminal bool
		want     []string
	}{
		{name: "terminal", terminal: true, want: []string{"\r\x1b[K", "[###############---------------] 2/4 layers 2MiB/4MiB 1MiB/s"}},
		{name: "plain", terminal: false, want: []string{"registry.example.com/team/app:v1: sha256:cccc", "layer 2/4 sha256:dddd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			clock = at
			pw := &ProgressWriter{W: &b, Terminal: tt.terminal, NowFunc: func() time.Time { return clock }}
			pw.Report(p)
			clock = at.Add(2 * time.Second)
			q := p
			q.LayersDone, q.BytesDone, q.Blob = 2, 2<<20, "sha256:"+strings.Repeat("d", 64)
			pw.Report(q)
			pw.End()
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output %q lacks %q", b.String(), w)
				}
			}
			if !tt.terminal && strings.Contains(b.String(), "\r") {
				t.Errorf("plain output has a carriage return: %q", b.String())
			}
		})
	}
}
