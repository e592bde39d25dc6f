package deploy

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	socketPath    = "systemd/snigate.socket"
	dropIn253Path = "systemd/snigate-systemd-253.conf"
)

// systemdVersion is the version of the local systemd-analyze, 0 if unknown.
func systemdVersion(tool string) int {
	out, err := exec.Command(tool, "--version").Output()
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`^systemd (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

// dropIn applies the [Service] keys of a drop-in to unit's, as systemd
// does for the keys used here: a later value replaces Type=; an empty
// ExecReload= clears the list, others append.
func dropIn(unit, drop unitFile) map[string][]string {
	out := map[string][]string{}
	for k, v := range unit["Service"] {
		out[k] = slices.Clone(v)
	}
	for k, vs := range drop["Service"] {
		for _, v := range vs {
			switch {
			case k == "ExecReload" && v == "":
				out[k] = nil
			case k == "ExecReload":
				out[k] = append(out[k], v)
			default:
				out[k] = []string{v}
			}
		}
	}
	return out
}

// TestSystemdDropIn253: on systemd 253 and later the drop-in makes the
// unit Type=notify-reload (systemd sends SIGHUP and waits for READY=1)
// and keeps only the check of the file in ExecReload=, so that a rejected
// file still fails the reload.
func TestSystemdDropIn253(t *testing.T) {
	s := dropIn(parseUnit(t, readFile(t, unitPath)), parseUnit(t, readFile(t, dropIn253Path)))
	if got := s["Type"]; !slices.Equal(got, []string{"notify-reload"}) {
		t.Errorf("Type = %q, want notify-reload", got)
	}
	if want := []string{checkCommand}; !slices.Equal(s["ExecReload"], want) {
		t.Errorf("ExecReload = %q, want %q (systemd sends the signal itself)", s["ExecReload"], want)
	}
}

// TestPackagedUnit253IsDropIn: the Makefile's edit of the packaged unit for
// PKG_SYSTEMD >= 253 gives the unit with the 253 drop-in applied.
func TestPackagedUnit253IsDropIn(t *testing.T) {
	var script string
	for _, line := range strings.Split(string(readFile(t, "../Makefile")), "\n") {
		if strings.Contains(line, "sed -i") && strings.Contains(line, "Type=notify-reload") {
			script = strings.TrimSuffix(strings.TrimSpace(line), "\\")
			script = strings.TrimSuffix(strings.TrimSpace(script), ";")
		}
	}
	if script == "" {
		t.Fatal("../Makefile: no sed line that makes the unit Type=notify-reload")
	}
	p := filepath.Join(t.TempDir(), "snigate.service")
	if err := os.WriteFile(p, readFile(t, unitPath), 0o644); err != nil {
		t.Fatal(err)
	}
	script = strings.ReplaceAll(strings.ReplaceAll(script, "$$", "$"), "bin/pkg/systemd/snigate.service", p)
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	got := parseUnit(t, readFile(t, p))["Service"]
	want := dropIn(parseUnit(t, readFile(t, unitPath)), parseUnit(t, readFile(t, dropIn253Path)))
	for _, k := range []string{"Type", "ExecReload"} {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("packaged unit for 253: %s = %q, want %q as with the drop-in", k, got[k], want[k])
		}
	}
}

// TestSystemdSocketMatchesConfig: every socket of snigate.socket is one
// that the example configuration claims (snigate matches an inherited
// socket by the address it is bound to), and every listen.* address has
// its socket, so that a restart refuses nothing on any of them.
func TestSystemdSocketMatchesConfig(t *testing.T) {
	u := parseUnit(t, readFile(t, socketPath))
	cfg, err := parseGatewayConfig(readFile(t, bastionConfig))
	if err != nil {
		t.Fatal(err)
	}
	type sock struct{ network, addr string }
	want := map[sock]string{}
	add := func(key, network, addr string) {
		if addr != "" {
			want[sock{network, socketAddr(addr)}] = key
		}
	}
	for _, a := range cfg.Listen.TLS {
		add("listen.tls", "stream", a)
	}
	add("listen.connect", "stream", cfg.Listen.Connect)
	add("listen.dns", "stream", cfg.Listen.DNS)
	add("listen.dns", "datagram", cfg.Listen.DNS)
	add("listen.admin", "stream", strings.TrimPrefix(cfg.Listen.Admin, "unix:"))
	got := map[sock]bool{}
	for kind, key := range map[string]string{"stream": "ListenStream", "datagram": "ListenDatagram"} {
		for _, v := range u["Socket"][key] {
			s := sock{kind, v}
			got[s] = true
			if _, ok := want[s]; !ok {
				t.Errorf("%s: %s=%s is no listen.* address of %s: snigate would close it and systemd keep it, unanswered", socketPath, key, v, bastionConfig)
			}
		}
	}
	for s, key := range want {
		if !got[s] {
			t.Errorf("%s: %s %s (%s) has no socket: a restart refuses connections there", socketPath, key, s.addr, s.network)
		}
	}
	if got := u.last("Socket", "Service"); got != "snigate.service" {
		t.Errorf("Service = %q, want snigate.service", got)
	}
}

// socketAddr is a listen.* address as a ListenStream= value: ":443" is
// "443" (every address), "127.0.0.1:9090" stays, a path stays.
func socketAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // a unix socket path
	}
	if host == "" {
		return port
	}
	return addr
}

// TestSystemdAnalyzeVerifySocket runs systemd's checker on the socket unit
// beside the service it activates.
func TestSystemdAnalyzeVerifySocket(t *testing.T) {
	tool := needTool(t, "systemd-analyze", "systemd")
	dir := filepath.Dir(unitForVerify(t))
	if err := os.WriteFile(filepath.Join(dir, "snigate.socket"), readFile(t, socketPath), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", filepath.Join(dir, "snigate.socket")).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify %s: %v\n%s", socketPath, err, out)
	}
}
