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
)

// TestCheckOutput is issue 27 item 2: check's warnings went to standard
// output among the summary, there was no JSON for tools, -c - did not
// read standard input, and one error read "(1 errors)".
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	const open = "listen:\n  tls: [\"127.0.0.1:0\"]\n  admin: \":9090\"\nroutes:\n  - name: a\n    sni: [a.example.test]\n    mode: splice\n    upstreams: [\"127.0.0.1:1\"]\n"
	const bad = "listen:\n  tls: [\"127.0.0.1:0\"]\n  tsl: oops\nroutes:\n  - name: a\n    sni: [a.example.test]\n    mode: splice\n    upstreams: [\"127.0.0.1:1\"]\n"
	file := filepath.Join(dir, "open.yaml")
	if err := os.WriteFile(file, []byte(open), 0o644); err != nil {
		t.Fatal(err)
	}
	const adminWarning = "warning: <stdin>:3: listen.admin: :9090: the admin API is unauthenticated"
	tests := []struct {
		name                  string
		args                  []string
		stdin                 string
		want                  int
		wantOut, wantStderr   []string
		notInOut, notInStderr []string
	}{
		{name: "warnings go to standard error", args: []string{"check", "-c", "-"}, stdin: open, want: 0,
			wantOut: []string{"<stdin>: configuration OK (1 route, 1 upstream)\n"}, notInOut: []string{"warning"},
			wantStderr: []string{adminWarning}},
		{name: "a file by name", args: []string{"check", "-c", file}, want: 0,
			wantOut: []string{"open.yaml: configuration OK (1 route, 1 upstream)\n"}, wantStderr: []string{"open.yaml:3: listen.admin: :9090"}},
		{name: "one error is one error", args: []string{"check", "-c", "-"}, stdin: bad, want: 2,
			wantStderr: []string{"snigate check: invalid configuration (1 error):\n<stdin>:3: listen.tsl: unknown key"}, notInStderr: []string{"--help"}},
		{name: "json for a valid file", args: []string{"check", "-c", "-", "-o", "json"}, stdin: open, want: 0,
			wantOut: []string{`"ok": true`, `"routes": 1`, `"key": "listen.admin"`, `"line": 3`, `"errors": []`}, notInStderr: []string{"warning"}},
		{name: "json for an invalid file", args: []string{"check", "-c", "-", "-o", "json"}, stdin: bad, want: 2,
			wantOut: []string{`"ok": false`, `"key": "listen.tsl"`, `"text": "<stdin>:3: listen.tsl: unknown key`}, notInStderr: []string{"listen.tsl"}},
		{name: "json and probe", args: []string{"check", "-c", file, "-o", "json", "--probe"}, want: 2, wantStderr: []string{"--probe prints a table"}},
		{name: "bad output", args: []string{"check", "-c", file, "-o", "yaml"}, want: 2, wantStderr: []string{"want text or json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := runWithStdin(tt.args, strings.NewReader(tt.stdin), &stdout, &stderr); got != tt.want {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, &stdout, &stderr)
			}
			check := func(what, text string, want, not []string) {
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("%s lacks %q:\n%s", what, w, text)
					}
				}
				for _, n := range not {
					if strings.Contains(text, n) {
						t.Errorf("%s has %q:\n%s", what, n, text)
					}
				}
			}
			check("stdout", stdout.String(), tt.wantOut, tt.notInOut)
			check("stderr", stderr.String(), tt.wantStderr, tt.notInStderr)
			if strings.Contains(strings.Join(tt.args, " "), "json") && tt.want != 2 || strings.Contains(tt.name, "json for") {
				var v map[string]any
				if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
					t.Errorf("stdout is not one JSON object: %v", err)
				}
			}
		})
	}
}

// TestCtlReloadRejectedHasNoUsageHint: a rejected file is the file's
// fault, so ctl reload prints its errors without "Run '... --help' for
// usage" (issue 27 item 3), and one error reads "(1 error)".
func TestCtlReloadRejectedHasNoUsageHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(422)
		w.Write([]byte(`{"result":"failure","reason":"admin API","at":"2027-01-01T00:00:00Z","errors":["snigate.yaml:3: listen.tsl: unknown key"]}`))
	}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	if got := run([]string{"ctl", "--admin", strings.TrimPrefix(srv.URL, "http://"), "reload"}, &stdout, &stderr); got != 2 {
		t.Errorf("exit status %d, want 2", got)
	}
	const want = "snigate ctl reload: invalid configuration (1 error):\nsnigate.yaml:3: listen.tsl: unknown key\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%q\nwant:\n%q", stderr.String(), want)
	}
}

// TestCAInitForNodes is issue 27 item 8: a CA made only to sign node
// certificates printed the instructions for making nodes trust it as a
// serving CA (copy ca.crt to certs.d on every node). With --nodes it says
// how serve.client_ca and ca issue-node use it, and nothing about trust.
func TestCAInitForNodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodes-ca")
	var stdout, stderr bytes.Buffer
	if got := run([]string{"ca", "init", "--out", dir, "--nodes"}, &stdout, &stderr); got != 0 {
		t.Fatalf("exit %d: %s", got, &stderr)
	}
	for _, w := range []string{"nodes do not need to trust it", "client_ca: " + filepath.Join(dir, "ca.crt"), "snigate ca issue-node NODE --ca " + dir} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, &stdout)
		}
	}
	for _, n := range []string{"certs.d", "no name constraints"} {
		if strings.Contains(stdout.String(), n) {
			t.Errorf("stdout has the serving CA's %q:\n%s", n, &stdout)
		}
	}
	stderr.Reset()
	if got := run([]string{"ca", "init", "--out", dir + "2", "--nodes", "--name", "a.test"}, &stdout, &stderr); got != 2 || !strings.Contains(stderr.String(), "--nodes") {
		t.Errorf("--nodes with --name: exit %d, stderr %s", got, &stderr)
	}
}
