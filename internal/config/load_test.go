package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const relativeExample = `listen:
  tls: [":443"]
routes:
  - name: r
    sni: [a.example.com]
    mode: bridge
    upstreams: ["10.0.0.1:443"]
    serve: {cert: pki/serve.crt, key: ./pki/serve.key}
    upstream_tls: {cert: ../outside/client.crt, key: ../outside/client.key, ca: CA_ABS}
`

// relativeWorld writes dir/etc/snigate.yaml referring to dir/etc/pki,
// dir/outside and an absolute CA path, and returns dir.
func relativeWorld(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"etc/pki", "outside", "abs"} {
		testPKI(t, filepath.Join(dir, sub))
	}
	yaml := strings.Replace(relativeExample, "CA_ABS", filepath.Join(dir, "abs", "ca.crt"), 1)
	writeFile(t, filepath.Join(dir, "etc", "snigate.yaml"), []byte(yaml))
	return dir
}

func checkResolved(t *testing.T, c *Config, dir string) {
	t.Helper()
	r := c.Routes[0]
	want := map[string]string{
		"serve.cert":        filepath.Join(dir, "etc", "pki", "serve.crt"),
		"serve.key":         filepath.Join(dir, "etc", "pki", "serve.key"),
		"upstream_tls.cert": filepath.Join(dir, "outside", "client.crt"),
		"upstream_tls.key":  filepath.Join(dir, "outside", "client.key"),
		"upstream_tls.ca":   filepath.Join(dir, "abs", "ca.crt"),
	}
	got := map[string]string{
		"serve.cert": r.Serve.Cert, "serve.key": r.Serve.Key,
		"upstream_tls.cert": r.UpstreamTLS.Cert, "upstream_tls.key": r.UpstreamTLS.Key, "upstream_tls.ca": r.UpstreamTLS.CA,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
}

func TestRelativePathsFollowTheConfigFile(t *testing.T) {
	dir := relativeWorld(t)
	t.Run("Load with an absolute path", func(t *testing.T) {
		c, err := Load(filepath.Join(dir, "etc", "snigate.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		checkResolved(t, c, dir)
	})
	t.Run("Load with a relative path", func(t *testing.T) {
		t.Chdir(dir)
		c, err := Load(filepath.Join("etc", "snigate.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		checkResolved(t, c, dir)
		if c.File != filepath.Join("etc", "snigate.yaml") {
			t.Errorf("File = %q, want the name as given", c.File)
		}
	})
	t.Run("Parse with a bare file name", func(t *testing.T) {
		t.Chdir(filepath.Join(dir, "etc"))
		data, err := os.ReadFile("snigate.yaml")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse("snigate.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		checkResolved(t, c, dir)
	})
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		want string
	}{
		{name: "missing file", path: filepath.Join(dir, "nope.yaml"),
			want: filepath.Join(dir, "nope.yaml") + ": cannot read the configuration: no such file or directory"},
		{name: "a directory", path: dir,
			want: dir + ": cannot read the configuration: not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.path)
			if c != nil || err == nil {
				t.Fatalf("Load = %v, %v; want an error", c, err)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Line != 0 || e.Key != "" {
				t.Errorf("errors.As(*Error) = %+v; want one with no line and no key", e)
			}
		})
	}
}

// TestLoadWithoutFiles: the names-only reader accepts a bridge route whose
// certificate files are absent on this host, and still validates the rest.
func TestLoadWithoutFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "snigate.yaml")
	good := minimalBridge
	if err := os.WriteFile(file, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file); err == nil {
		t.Fatal("Load accepted missing certificate files")
	}
	c, err := LoadWithoutFiles(file)
	if err != nil {
		t.Fatalf("LoadWithoutFiles: %v", err)
	}
	if names := c.RoutedNames(); len(names) == 0 {
		t.Error("no routed names")
	}
	if err := os.WriteFile(file, []byte(good+"bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWithoutFiles(file); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("LoadWithoutFiles = %v, want the unknown key reported", err)
	}
}
