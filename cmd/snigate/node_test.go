package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeCommandsExitStatus: node-config and doctor follow the contract's
// exit statuses: 2 for bad usage or an invalid configuration, 1 when a
// pull would not work.
func TestNodeCommandsExitStatus(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("listen:\n  tls: [\":443\"]\n  tsl: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string
		wantOut    string
	}{
		{name: "node-config without -c", args: []string{"node-config"}, want: 2, wantStderr: "-c FILE is required"},
		{name: "node-config bad runtime", args: []string{"node-config", "-c", bad, "--runtime", "cri-o"}, want: 2, wantStderr: "want containerd, docker or podman"},
		{name: "node-config invalid file", args: []string{"node-config", "-c", bad, "--out", dir}, want: 2, wantStderr: "bad.yaml:3: listen.tsl"},
		{name: "doctor without NAME", args: []string{"doctor"}, want: 2, wantStderr: "usage: snigate doctor NAME"},
		{name: "doctor with a bad second NAME", args: []string{"doctor", "a.example", "b example"}, want: 2, wantStderr: `NAME "b example"`},
		{name: "doctor bad NAME", args: []string{"doctor", "a.example:99999"}, want: 2, wantStderr: "bad port"},
		{name: "doctor, no nameserver: flags after NAME", args: []string{"doctor", "a.example", "--resolv-conf", empty, "--hosts-file", empty},
			want: 1, wantOut: "FAIL resolver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tt.args, &stdout, &stderr); got != tt.want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", got, tt.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) || !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stderr %q lacks %q or stdout %q lacks %q", stderr.String(), tt.wantStderr, stdout.String(), tt.wantOut)
			}
		})
	}
}
