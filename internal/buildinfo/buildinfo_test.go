package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	withVCS := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "3ce2397abc"},
			{Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}}}
	tests := []struct {
		name  string
		stamp stamp
		bi    *debug.BuildInfo
		ok    bool
		want  Info
	}{
		{name: "no build info", ok: false,
			want: Info{Version: "(devel)", Commit: "unknown", Date: "unknown", GoVersion: runtime.Version(), Platform: platform}},
		{name: "devel without vcs", ok: true, bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: "(devel)", Commit: "unknown", Date: "unknown", GoVersion: "go1.26.8", Platform: platform}},
		{name: "release with vcs", ok: true, bi: withVCS,
			want: Info{Version: "v1.2.3", Commit: "3ce2397abc", Date: "2026-11-30T10:00:00Z", GoVersion: "go1.26.8", Platform: platform}},
		{name: "empty main version", ok: true, bi: &debug.BuildInfo{},
			want: Info{Version: "(devel)", Commit: "unknown", Date: "unknown", GoVersion: runtime.Version(), Platform: platform}},
		{name: "stamp wins over the toolchain", ok: true, bi: withVCS,
			stamp: stamp{version: "v2.0.0", commit: "feedface", date: "2026-12-01T08:00:00Z"},
			want:  Info{Version: "v2.0.0", Commit: "feedface", Date: "2026-12-01T08:00:00Z", GoVersion: "go1.26.8", Platform: platform}},
		{name: "blank stamp is no stamp", ok: true, bi: withVCS, stamp: stamp{version: " ", commit: ""},
			want: Info{Version: "v1.2.3", Commit: "3ce2397abc", Date: "2026-11-30T10:00:00Z", GoVersion: "go1.26.8", Platform: platform}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolve(tt.stamp, tt.bi, tt.ok); got != tt.want {
				t.Errorf("resolve = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

// TestString: the first line is "snigate VERSION" (scripts read it), then
// every field on a line of its own.
func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "abc", Date: "2026-12-01T08:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	got := i.String()
	if first, _, _ := strings.Cut(got, "\n"); first != "snigate v1.2.3" {
		t.Errorf("first line %q, want %q", first, "snigate v1.2.3")
	}
	for _, w := range []string{"commit:   abc\n", "built:    2026-12-01T08:00:00Z\n", "go:       go1.26.8\n", "platform: linux/amd64\n"} {
		if !strings.Contains(got, w) {
			t.Errorf("String() lacks %q:\n%s", w, got)
		}
	}
}
