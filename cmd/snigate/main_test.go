package main

import (
	"bytes"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exitCase is a command line and the status and output it ends with.
type exitCase struct {
	name       string
	args       []string
	want       int
	wantOut    string
	wantStderr []string
}

// exitCases run with the valid config good, the invalid bad, and dir holding neither nope.yaml.
func exitCases(dir, good, bad string) []exitCase {
	return []exitCase{
		{name: "no command", args: nil, want: 2, wantStderr: []string{"a command is required", "Usage:", "Available Commands:"}},
		{name: "unknown command", args: []string{"serve"}, want: 2, wantStderr: []string{`unknown command "serve"`}},
		{name: "version", args: []string{"version"}, want: 0, wantOut: "snigate "},
		{name: "check valid", args: []string{"check", "-c", good}, want: 0, wantOut: "configuration OK"},
		{name: "check invalid", args: []string{"check", "-c", bad}, want: 2, wantStderr: []string{
			"bad.yaml:3: listen.tsl: unknown key",
			"bad.yaml:7: routes[0].mode:",
		}},
		{name: "check without -c", args: []string{"check"}, want: 2, wantStderr: []string{"-c FILE is required"}},
		{name: "check missing file", args: []string{"check", "-c", filepath.Join(dir, "nope.yaml")}, want: 2, wantStderr: []string{"nope.yaml"}},
		{name: "run invalid", args: []string{"run", "-c", bad}, want: 2, wantStderr: []string{"bad.yaml:3: listen.tsl"}},
		{name: "run bad log format", args: []string{"run", "-c", good, "--log-format", "xml"}, want: 2, wantStderr: []string{"--log-format"}},
		{name: "ctl unreachable", args: []string{"ctl", "--admin", "127.0.0.1:1", "upstreams"}, want: 1, wantStderr: []string{"127.0.0.1:1"}},
		{name: "ctl answers unreachable", args: []string{"ctl", "--admin", "127.0.0.1:1", "answers"}, want: 1, wantStderr: []string{"127.0.0.1:1"}},
		{name: "ctl unknown verb", args: []string{"ctl", "answer"}, want: 2, wantStderr: []string{`"answers"`}},
		{name: "ctl bad state", args: []string{"ctl", "set", "a", "b", "sleeping"}, want: 2, wantStderr: []string{"sleeping"}},
		{name: "ca without init", args: []string{"ca"}, want: 2, wantStderr: []string{"ca init"}},
		{name: "ca init without out", args: []string{"ca", "init"}, want: 2, wantStderr: []string{"--out"}},
		{name: "ca issue-node without NAME", args: []string{"ca", "issue-node", "--ca", "x", "--out", "y"}, want: 2, wantStderr: []string{"exactly one NAME"}},
		{name: "ca issue-node without --ca", args: []string{"ca", "issue-node", "w1", "--out", "y"}, want: 2, wantStderr: []string{"--ca DIR and --out DIR are required"}},
	}
}

// TestExitStatus: exit statuses and messages of the contract: 0 success,
// 1 runtime failure, 2 bad usage or invalid configuration, with file, line
// and key named.
func TestExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `listen:
  tls: ["127.0.0.1:0"]
routes:
  - name: a
    sni: [a.example.test]
    mode: splice
    upstreams: ["127.0.0.1:1"]
`)
	bad := write("bad.yaml", `listen:
  tls: ["127.0.0.1:0"]
  tsl: oops
routes:
  - name: a
    sni: [a.example.test]
    mode: sideways
    upstreams: ["127.0.0.1:1"]
`)
	tests := exitCases(dir, good, bad)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := run(tt.args, &stdout, &stderr)
			if got != tt.want {
				t.Errorf("exit status %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout lacks %q: %s", tt.wantOut, &stdout)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q: %s", w, &stderr)
				}
			}
		})
	}
}

// TestCAInit: ca init writes the CA with a 0600 key, refuses to overwrite,
// and prints how to trust it.
func TestCAInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	var stdout, stderr bytes.Buffer
	if got := run([]string{"ca", "init", "--out", dir, "--name", "registry.example.test"}, &stdout, &stderr); got != 0 {
		t.Fatalf("ca init = %d: %s", got, &stderr)
	}
	fi, err := os.Stat(filepath.Join(dir, "ca.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ca.key: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	if !strings.Contains(stdout.String(), "/etc/containerd/certs.d/registry.example.test/hosts.toml") {
		t.Errorf("no containerd trust instructions:\n%s", &stdout)
	}
	stderr.Reset()
	if got := run([]string{"ca", "init", "--out", dir}, &stdout, &stderr); got != 1 || !strings.Contains(stderr.String(), "--force") {
		t.Errorf("second ca init = %d, %s; want a refusal naming --force", got, &stderr)
	}
}

// TestCAIssueNode: ca issue-node writes a kubelet-style node certificate
// signed by the CA and prints the hosts.toml and client_ca lines.
func TestCAIssueNode(t *testing.T) {
	dir := t.TempDir()
	caDir, out := filepath.Join(dir, "nodes-ca"), filepath.Join(dir, "nodes")
	var stdout, stderr bytes.Buffer
	if got := run([]string{"ca", "init", "--out", caDir}, &stdout, &stderr); got != 0 {
		t.Fatalf("ca init = %d: %s", got, &stderr)
	}
	stdout.Reset()
	if got := run([]string{"ca", "issue-node", "worker-1", "--ca", caDir, "--out", out, "--days", "30"}, &stdout, &stderr); got != 0 {
		t.Fatalf("ca issue-node = %d: %s", got, &stderr)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(out, "worker-1.crt"), filepath.Join(out, "worker-1.key"))
	if err != nil {
		t.Fatal(err)
	}
	if cn := pair.Leaf.Subject.CommonName; cn != "system:node:worker-1" {
		t.Errorf("CN %q, want system:node:worker-1", cn)
	}
	for _, want := range []string{`client = [["worker-1.crt", "worker-1.key"]]`, "client_ca: " + filepath.Join(caDir, "ca.crt")} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &stdout)
		}
	}
	if got := run([]string{"ca", "issue-node", "Bad_Name", "--ca", caDir, "--out", out}, &stdout, &stderr); got != 1 || !strings.Contains(stderr.String(), "want a Kubernetes node name") {
		t.Errorf("bad name = %d, %s; want a refusal that says what a node name is", got, &stderr)
	}
}
