package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/buildinfo"
)

// runCLI runs the command line args and returns its exit status, stdout
// and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestHelpOnStdout: `help CMD`, `CMD --help` and `CMD -h` print the
// command's description and examples on stdout and exit 0 (the
// hand-written dispatcher printed flag usage on stderr with exit 2).
func TestHelpOnStdout(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "help", args: []string{"help"}, want: []string{"Available Commands:", "run", "check", "ctl", "completion"}},
		{name: "--help", args: []string{"--help"}, want: []string{"Exit status: 0 success"}},
		{name: "help run", args: []string{"help", "run"}, want: []string{"SIGHUP", "Examples:", "--log-format"}},
		{name: "run --help", args: []string{"run", "--help"}, want: []string{"timeouts.drain", "-c, --config"}},
		{name: "check -h", args: []string{"check", "-h"}, want: []string{"--probe", "Examples:"}},
		{name: "help demo", args: []string{"help", "demo"}, want: []string{"--keep"}},
		{name: "help ca init", args: []string{"help", "ca", "init"}, want: []string{"--out", "--name", "--force", "0600"}},
		{name: "ctl --help lists its verbs", args: []string{"ctl", "--help"}, want: []string{"upstreams", "set", "answers", "SNIGATE_ADMIN", "--admin", "--output"}},
		{name: "help ctl set", args: []string{"help", "ctl", "set"}, want: []string{"ready", "drain", "maint", "Examples:"}},
		{name: "help version", args: []string{"help", "version"}, want: []string{"build date"}},
		{name: "help completion", args: []string{"help", "completion"}, want: []string{"bash", "zsh", "fish"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != 0 || stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestEveryCommandExplainsItself: every command has a description and
// examples, so that help and the man pages say how to use it.
func TestEveryCommandExplainsItself(t *testing.T) {
	root := newRoot(&app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }})
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Name() == "completion" || sub.Parent().Name() == "completion" || sub.Name() == "help" {
				continue
			}
			if sub.Hidden {
				continue
			}
			if sub.Short == "" || sub.Long == "" || sub.Example == "" {
				t.Errorf("%s: want Short, Long and Example", sub.CommandPath())
			}
			walk(sub)
		}
	}
	walk(root)
}

// TestCtlAdminAddress: ctl's address is --admin, before or after the verb,
// else $SNIGATE_ADMIN, else the default.
func TestCtlAdminAddress(t *testing.T) {
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits = append(hits, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"route":"registry","upstream":"10.1.0.10:443","state":"ready","healthy":true}]`))
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name string
		env  string
		args []string
		want int
	}{
		{name: "flag before the verb", args: []string{"ctl", "--admin", addr, "upstreams"}, want: 0},
		{name: "flag after the verb", args: []string{"ctl", "upstreams", "--admin", addr}, want: 0},
		{name: "flag with =", args: []string{"ctl", "upstreams", "--admin=" + addr}, want: 0},
		{name: "single-dash long flag, as Go's flag package took it", args: []string{"ctl", "-admin", addr, "upstreams"}, want: 0},
		{name: "SNIGATE_ADMIN", env: addr, args: []string{"ctl", "upstreams"}, want: 0},
		{name: "--admin beats SNIGATE_ADMIN", env: "127.0.0.1:1", args: []string{"ctl", "upstreams", "--admin", addr}, want: 0},
		{name: "SNIGATE_ADMIN unreachable", env: "127.0.0.1:1", args: []string{"ctl", "upstreams"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envAdmin, tt.env)
			hits = nil
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.want, stdout, stderr)
			}
			if tt.want == 0 && (len(hits) != 1 || !strings.Contains(stdout, "10.1.0.10:443")) {
				t.Errorf("requests %v, stdout %q; want one GET /api/upstreams and its table", hits, stdout)
			}
		})
	}
}

// TestCtlOutputJSON: -o json prints the API's objects.
func TestCtlOutputJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`[{"route":"registry","upstream":"10.1.0.10:443","state":"drain","healthy":true}]`))
	}))
	t.Cleanup(srv.Close)
	code, stdout, stderr := runCLI(t, "ctl", "upstreams", "-o", "json", "--admin", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got) != 1 || got[0]["state"] != "drain" {
		t.Errorf("stdout %q (%v): want the upstream as JSON", stdout, err)
	}
	if code, _, stderr := runCLI(t, "ctl", "upstreams", "-o", "yaml", "--admin", srv.URL); code != 2 || !strings.Contains(stderr, "want table or json") {
		t.Errorf("-o yaml: exit %d, %q; want 2 naming table and json", code, stderr)
	}
}

// TestVersion: `version` and `--version` print the build; -o json its fields.
func TestVersion(t *testing.T) {
	want := buildinfo.Get().String()
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		if code, stdout, _ := runCLI(t, args...); code != 0 || stdout != want {
			t.Errorf("%v: exit %d, %q; want 0, %q", args, code, stdout, want)
		}
	}
	code, stdout, _ := runCLI(t, "version", "-o", "json")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil || got != buildinfo.Get() {
		t.Errorf("version -o json: exit %d, %q (%v)", code, stdout, err)
	}
}

// TestCompletion: the completion scripts for bash, zsh and fish come from
// the same definitions.
func TestCompletion(t *testing.T) {
	tests := []struct{ name, want string }{
		{name: "bash", want: "__start_snigate"},
		{name: "zsh", want: "#compdef snigate"},
		{name: "fish", want: "complete -c snigate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "completion", tt.name)
			if code != 0 || !strings.Contains(stdout, tt.want) {
				t.Errorf("exit %d, stderr %q; stdout lacks %q", code, stderr, tt.want)
			}
		})
	}
	// The completion of ctl's verbs, as a shell asks for it.
	code, stdout, _ := runCLI(t, "__complete", "ctl", "")
	if code != 0 || !strings.Contains(stdout, "upstreams") || !strings.Contains(stdout, "set") {
		t.Errorf("__complete ctl: exit %d, %q; want its verbs", code, stdout)
	}
}

// TestManPages: `snigate man --out DIR` (make man) writes a page per
// command, from the same definitions as --help.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "man", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for page, want := range map[string]string{
		"snigate.1":         ".TH \"SNIGATE\" \"1\"",
		"snigate-run.1":     "timeouts.drain",
		"snigate-ctl-set.1": "maint",
		"snigate-ca-init.1": "--force",
	} {
		data, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(data), want) {
			t.Errorf("%s: %v; want it to contain %q", page, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "snigate-man.1")); err == nil {
		t.Errorf("snigate-man.1 written: the hidden build command has no page")
	}
}

// TestCompatFlags: the spellings Go's flag package accepted before the
// move to cobra still work.
func TestCompatFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "s.yaml")
	os.WriteFile(cfg, []byte("listen:\n  tls: [\"127.0.0.1:0\"]\nroutes:\n  - name: a\n    sni: [a.test]\n    mode: splice\n    upstreams: [\"127.0.0.1:1\"]\n"), 0o644)
	for _, args := range [][]string{
		{"check", "-c", cfg}, {"check", "-c=" + cfg}, {"check", "--c", cfg}, {"check", "--config", cfg},
		{"check", "-config", cfg},
	} {
		if code, stdout, stderr := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "configuration OK") {
			t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "ca", "init", "-out", filepath.Join(dir, "ca"), "-name", "a.test"); code != 0 {
		t.Errorf("ca init -out -name: exit %d: %s", code, stderr)
	}
}
