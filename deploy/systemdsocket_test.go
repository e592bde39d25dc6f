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
	dropIn252Path = "systemd/snigate-systemd-252.conf"
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

// withDropInBefore253 is the unit as a systemd older than 253 runs it
// with snigate-systemd-252.conf installed: Type=notify-reload replaced by
// the drop-in's lines, so that verify checks what such a host runs (and
// does not warn about a type it does not know).
func withDropInBefore253(t *testing.T, unit string) string {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil || systemdVersion(tool) >= 253 {
		return unit
	}
	drop := parseUnit(t, readFile(t, dropIn252Path))["Service"]
	var lines []string
	for _, k := range []string{"Type", "ExecReload"} {
		for _, v := range drop[k] {
			lines = append(lines, k+"="+v)
		}
	}
	return strings.Replace(unit, "\nType=notify-reload\n", "\n"+strings.Join(lines, "\n")+"\n", 1)
}

// TestSystemdDropIn252 keeps the drop-in what systemd 252 needs.
func TestSystemdDropIn252(t *testing.T) {
	s := parseUnit(t, readFile(t, dropIn252Path))["Service"]
	if got := s["Type"]; !slices.Equal(got, []string{"notify"}) {
		t.Errorf("Type = %q, want notify", got)
	}
	if got := s["ExecReload"]; !slices.Equal(got, []string{"/bin/kill -HUP $MAINPID"}) {
		t.Errorf("ExecReload = %q, want /bin/kill -HUP $MAINPID", got)
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
