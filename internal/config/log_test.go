package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLogAccess: log.access is stderr (the default), off, or a file name,
// relative to the configuration's directory; a file whose directory is
// missing, or a directory, is refused with what to change.
func TestLogAccess(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		section string
		want    string   // Log.Access
		errs    []string // error lines, dir removed
	}{
		{name: "absent", section: "", want: AccessLogStderr},
		{name: "empty section", section: "log:\n", want: AccessLogStderr},
		{name: "stderr", section: "log:\n  access: stderr\n", want: AccessLogStderr},
		{name: "off", section: "log:\n  access: off\n", want: AccessLogOff},
		{name: "absolute file", section: "log:\n  access: " + filepath.Join(dir, "logs", "access.log") + "\n", want: filepath.Join(dir, "logs", "access.log")},
		{name: "relative file", section: "log:\n  access: logs/access.log\n", want: filepath.Join(dir, "logs", "access.log")},
		{name: "missing directory", section: "log:\n  access: nope/access.log\n", errs: []string{
			"snigate.yaml:9: log.access: directory nope does not exist: create it (writable by the gateway's user) or name another file"}},
		{name: "a directory", section: "log:\n  access: logs\n", errs: []string{
			"snigate.yaml:9: log.access: logs is a directory: want a file name in it, such as logs/access.log"}},
		{name: "empty string", section: "log:\n  access: \"\"\n", errs: []string{
			`snigate.yaml:9: log.access: want "stderr", "off", or a file name such as "/var/log/snigate/access.log", got an empty string`}},
		{name: "a list", section: "log:\n  access: [a]\n", errs: []string{
			`snigate.yaml:9: log.access: want "stderr", "off", or a file name such as "/var/log/snigate/access.log", got a list`}},
		{name: "unknown key", section: "log:\n  level: debug\n", errs: []string{
			"snigate.yaml:9: log.level: unknown key; allowed here: access"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := minimalSplice + tt.section
			errs := parseInDir(t, dir, text)
			for i := range errs {
				errs[i] = strings.ReplaceAll(errs[i], dir+string(filepath.Separator), "")
			}
			if !slices.Equal(errs, tt.errs) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(tt.errs, "\n"))
			}
			if tt.errs != nil {
				return
			}
			c, err := Parse(filepath.Join(dir, "snigate.yaml"), []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if c.Log.Access != tt.want {
				t.Errorf("Log.Access = %q, want %q", c.Log.Access, tt.want)
			}
		})
	}
}
