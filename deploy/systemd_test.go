package deploy

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	unitPath         = "systemd/snigate.service"
	bastionConfig    = "systemd/snigate.yaml"
	sysusersPath     = "systemd/snigate.sysusers.conf"
	installedBinary  = "/usr/local/bin/snigate"
	installedConfig  = "/etc/snigate/snigate.yaml"
	unitExposureGoal = "20" // tenths: exposure at most 2.0 ("OK" is below 4.0; the unit scores 1.4)
)

// unitFile is a systemd unit: section -> key -> values in order.
type unitFile map[string]map[string][]string

func parseUnit(t *testing.T, data []byte) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: want Key=value inside a [Section], got %q", unitPath, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unitFile) last(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// TestSystemdUnitHardening checks the unit's hardening and sizing against
// the example configuration it runs, without systemd.
func TestSystemdUnitHardening(t *testing.T) {
	u := parseUnit(t, readFile(t, unitPath))
	cfg, err := parseGatewayConfig(readFile(t, bastionConfig))
	if err != nil {
		t.Fatalf("%s: %v", bastionConfig, err)
	}
	want := map[string]string{
		"User": "snigate", "Group": "snigate",
		"AmbientCapabilities": "CAP_NET_BIND_SERVICE", "CapabilityBoundingSet": "CAP_NET_BIND_SERVICE",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"PrivateTmp": "yes", "PrivateDevices": "yes",
		"ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
		"ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "LockPersonality": "yes",
		"MemoryDenyWriteExecute": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"RuntimeDirectory": "snigate", "ReadOnlyPaths": "/etc/snigate", "Restart": "on-failure",
	}
	for k, v := range want {
		t.Run(k, func(t *testing.T) {
			if got := u.last("Service", k); got != v {
				t.Errorf("[Service] %s = %q, want %q", k, got, v)
			}
		})
	}
	t.Run("SystemCallFilter", func(t *testing.T) {
		if f := u["Service"]["SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
			t.Errorf("SystemCallFilter = %q, want @system-service first", f)
		}
	})
	t.Run("LimitNOFILE", func(t *testing.T) {
		n, err := strconv.Atoi(u.last("Service", "LimitNOFILE"))
		if err != nil {
			t.Fatalf("LimitNOFILE: want a number: %v", err)
		}
		if need := 2*cfg.maxConnections() + 1024; n < need {
			t.Errorf("LimitNOFILE = %d, want >= 2 fds x max_connections (%d) + headroom = %d",
				n, cfg.maxConnections(), need)
		}
	})
	t.Run("TimeoutStopSec", func(t *testing.T) {
		d, err := parseSystemdSeconds(u.last("Service", "TimeoutStopSec"))
		if err != nil {
			t.Fatal(err)
		}
		if d <= cfg.drain().Seconds() {
			t.Errorf("TimeoutStopSec = %vs, want above timeouts.drain = %v", d, cfg.drain())
		}
	})
	t.Run("Exec", func(t *testing.T) { checkUnitExec(t, u) })
}

func checkUnitExec(t *testing.T, u unitFile) {
	t.Helper()
	checks := []struct{ key, want string }{
		{"ExecStartPre", checkCommand},
		{"ExecStart", installedBinary + " run -c " + installedConfig},
		{"NotifyAccess", "all"}, // an upgrade's new process sends MAINPID=
	}
	for _, c := range checks {
		found := false
		for _, v := range u["Service"][c.key] {
			found = found || strings.HasPrefix(v, c.want)
		}
		if !found {
			t.Errorf("%s = %q, want a line starting %q", c.key, u["Service"][c.key], c.want)
		}
	}
	// systemd 252 (Debian 12) knows no Type=notify-reload: notify, and the
	// reload is ExecReload=, the check first (a rejected file fails the
	// reload, nothing is signalled), then SIGHUP.
	if got := u["Service"]["Type"]; !slices.Equal(got, []string{"notify"}) {
		t.Errorf("Type = %q, want notify (notify-reload is systemd 253's: the drop-in)", got)
	}
	if got, want := u["Service"]["ExecReload"], []string{checkCommand, "/bin/kill -HUP $MAINPID"}; !slices.Equal(got, want) {
		t.Errorf("ExecReload = %q, want %q", got, want)
	}
}

// checkCommand is `snigate check` on the installed configuration.
const checkCommand = installedBinary + " check -c " + installedConfig

func parseSystemdSeconds(v string) (float64, error) {
	s := strings.TrimSuffix(strings.TrimSpace(v), "s")
	return strconv.ParseFloat(s, 64)
}

// unitForVerify copies the unit to a temporary directory with the binary
// path replaced by one that exists here, because systemd-analyze verify
// refuses a unit whose ExecStart= is missing.
func unitForVerify(t *testing.T) string {
	t.Helper()
	stub, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to stand in for the snigate binary")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "snigate.service")
	writeStubbed(t, p, unitPath, stub)
	return p
}

// writeStubbed writes the file at path (of deploy/) to p with the binary
// path replaced by stub.
func writeStubbed(t *testing.T, p, path, stub string) {
	t.Helper()
	data := strings.ReplaceAll(string(readFile(t, path)), installedBinary, stub)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// needTool returns the path of the program name, from the Debian package
// pkg. Without it the test is skipped, or fails when SNIGATE_REQUIRE_E2E
// is set (make test, CI), so that a missing tool never passes silently.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("SNIGATE_REQUIRE_E2E") != "" {
			t.Fatalf("%s not found and SNIGATE_REQUIRE_E2E is set: install the Debian package %s (test/deps.sh does)", name, pkg)
		}
		t.Skipf("%s not found (Debian package %s): skipping the check that runs it", name, pkg)
	}
	return p
}

// TestSystemdAnalyzeVerify runs systemd's own unit checker on the unit as
// it ships (on Debian 12's systemd 252 here, with no drop-in); any
// warning (an unknown key, a value it cannot parse: "Failed to parse
// service type") fails the test. On systemd 253 and later the unit with
// the 253 drop-in is verified too.
func TestSystemdAnalyzeVerify(t *testing.T) {
	tool := needTool(t, "systemd-analyze", "systemd")
	unit := unitForVerify(t)
	out, err := exec.Command(tool, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", unitPath, err, out)
	}
	if v := systemdVersion(tool); v < 253 {
		t.Logf("systemd %d: the 253 drop-in is not verified here (Type=notify-reload is unknown before 253)", v)
		return
	}
	stub, _ := exec.LookPath("true")
	d := unit + ".d"
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	writeStubbed(t, filepath.Join(d, "systemd-253.conf"), dropIn253Path, stub)
	out, err = exec.Command(tool, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify %s with %s: %v\n%s", unitPath, dropIn253Path, err, out)
	}
}

// TestSystemdAnalyzeSecurity keeps the unit's exposure score low.
func TestSystemdAnalyzeSecurity(t *testing.T) {
	tool := needTool(t, "systemd-analyze", "systemd")
	cmd := exec.Command(tool, "security", "--offline=yes", "--threshold="+unitExposureGoal, "--no-pager", unitForVerify(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure above %s tenths (or error %v):\n%s", unitExposureGoal, err, out)
	}
	if !bytes.Contains(out, []byte("Overall exposure level")) {
		t.Fatalf("systemd-analyze security printed no score:\n%s", out)
	}
}

// TestSysusers creates the user from the sysusers.d snippet in a scratch root.
func TestSysusers(t *testing.T) {
	tool := needTool(t, "systemd-sysusers", "systemd")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "snigate.conf")
	if err := os.WriteFile(conf, readFile(t, sysusersPath), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "--root="+root, conf).CombinedOutput(); err != nil {
		t.Fatalf("systemd-sysusers: %v\n%s", err, out)
	}
	passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(strings.TrimSpace(string(passwd)), ":")
	if len(fields) != 7 || fields[0] != "snigate" || !strings.HasSuffix(fields[6], "nologin") {
		t.Fatalf("passwd entry = %q, want user snigate with a nologin shell", passwd)
	}
	if uid, _ := strconv.Atoi(fields[2]); uid == 0 || uid >= 1000 {
		t.Errorf("uid %d: want a system uid (1-999)", uid)
	}
}
