package nodeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteRefusesSymlinksBelowDir: a link planted under the output
// directory, where a directory or a data file goes, is refused by name;
// nothing is written (or read) where it points.
func TestWriteRefusesSymlinksBelowDir(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, elsewhere string) string // returns the path the error names
	}{
		{name: "directory link at certs.d", plant: func(t *testing.T, dir, elsewhere string) string {
			must(t, os.Symlink(elsewhere, filepath.Join(dir, "certs.d")))
			return filepath.Join(dir, "certs.d")
		}},
		{name: "directory link at the host's directory", plant: func(t *testing.T, dir, elsewhere string) string {
			must(t, os.MkdirAll(filepath.Join(dir, "certs.d"), 0o755))
			must(t, os.Symlink(elsewhere, filepath.Join(dir, "certs.d", "registry.example.com")))
			return filepath.Join(dir, "certs.d", "registry.example.com")
		}},
		{name: "file link at hosts.toml", plant: func(t *testing.T, dir, elsewhere string) string {
			p := filepath.Join(dir, "certs.d", "registry.example.com", "hosts.toml")
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(filepath.Join(elsewhere, "hosts.toml"), p))
			return p
		}},
		{name: "file link at the CA file", plant: func(t *testing.T, dir, elsewhere string) string {
			p := filepath.Join(dir, "certs.d", "registry.example.com", CAFile)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.Symlink(filepath.Join(elsewhere, "hosts.toml"), p))
			return p
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			victim := filepath.Join(elsewhere, "hosts.toml")
			must(t, os.WriteFile(victim, []byte("# not node-config's\n"), 0o644))
			named := tt.plant(t, dir, elsewhere)
			files, err := Build(testConfig(RuntimeContainerd), ReadDir(dir))
			if err == nil {
				err = Write(dir, files)
			}
			if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), named+" is a symbolic link") {
				t.Fatalf("err = %v, want %s named as a symbolic link", err, named)
			}
			if got, _ := os.ReadFile(victim); string(got) != "# not node-config's\n" {
				t.Errorf("the link's target was written: %q", got)
			}
			if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
				t.Errorf("files appeared where the link points: %v", ents)
			}
		})
	}
}

// TestWriteFollowsDirItself: the output directory itself may be a link
// (/etc/containerd on some nodes); only what is below it is not followed.
func TestWriteFollowsDirItself(t *testing.T) {
	real := t.TempDir()
	dir := filepath.Join(t.TempDir(), "out")
	must(t, os.Symlink(real, dir))
	files, err := Build(testConfig(RuntimeContainerd), ReadDir(dir))
	must(t, err)
	must(t, Write(dir, files))
	if _, err := os.Stat(filepath.Join(real, "certs.d", "registry.example.com", "hosts.toml")); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteSummarySaysWhatRuntimeGets: the summary's advice matches the
// layout written: hosts.toml and ctr for containerd; for docker and
// podman, no hosts.toml, their own certs.d and a way to try it.
func TestWriteSummarySaysWhatRuntimeGets(t *testing.T) {
	tests := []struct {
		name    string
		rt      Runtime
		want    []string
		notWant []string
	}{
		{name: "containerd", rt: RuntimeContainerd,
			want: []string{"paths in hosts.toml are relative", "ctr images pull --hosts-dir /out/certs.d", "cp -r /out/certs.d/. /etc/containerd/certs.d/"}},
		{name: "docker", rt: RuntimeDocker,
			want:    []string{"no hosts.toml", "cp -a /out/certs.d/. /etc/docker/certs.d/", "docker pull", CAFile, "client.cert and client.key"},
			notWant: []string{"ctr ", "paths in hosts.toml"}},
		{name: "podman", rt: RuntimePodman,
			want:    []string{"no hosts.toml", "cp -a /out/certs.d/. /etc/containers/certs.d/", "skopeo inspect --cert-dir /out/certs.d/NAME"},
			notWant: []string{"ctr ", "paths in hosts.toml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := Build(testConfig(tt.rt), nil)
			must(t, err)
			var b strings.Builder
			must(t, WriteSummary(&b, "/out", tt.rt, files))
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("summary says %q:\n%s", w, b.String())
				}
			}
		})
	}
}
