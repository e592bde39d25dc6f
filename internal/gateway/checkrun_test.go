package gateway

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snigate/snigate/internal/config"
)

// TestCheckRefusesAnAuditLogRunCannotOpen is issue 27 item 2: an
// http.audit_log naming a directory passed check, and run then exited 2
// with the route's line and an error that did not name the key. Both now
// refuse it at routes[0].http.audit_log, with the same words.
func TestCheckRefusesAnAuditLogRunCannotOpen(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	logDir := filepath.Join(dir, "logs")
	must(t, os.Mkdir(logDir, 0o755))
	tests := []struct {
		name, auditLog, want string
		asUser               bool // needs a user that file modes bind (not root)
	}{
		{name: "a directory", auditLog: logDir,
			want: "snigate.yaml:12: routes[0].http.audit_log: " + logDir + " is a directory: name a file in it, such as " + filepath.Join(logDir, "audit.log")},
		{name: "a file to create", auditLog: filepath.Join(logDir, "audit.log")},
		{name: "standard output", auditLog: "-"},
		{name: "a read-only file", auditLog: readOnly(t, filepath.Join(dir, "ro.log"), 0o444), asUser: true,
			want: "snigate.yaml:12: routes[0].http.audit_log: " + filepath.Join(dir, "ro.log") + " is not writable by this user: give snigate write access to it, or name another file"},
		{name: "in a read-only directory", auditLog: filepath.Join(readOnly(t, filepath.Join(dir, "ro"), 0o555), "audit.log"), asUser: true,
			want: "snigate.yaml:12: routes[0].http.audit_log: cannot create " + filepath.Join(dir, "ro", "audit.log") + ": the directory " + filepath.Join(dir, "ro") +
				" is not writable by this user: give snigate write access (systemd ReadWritePaths=, LogsDirectory=) or name a file elsewhere"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.asUser && os.Geteuid() == 0 {
				t.Skip("root writes whatever the mode says")
			}
			yaml := bridgeYAML("      - reg.test\n", "{cert: serve.crt, key: serve.key}", "{cert: edge.crt, key: edge.key}") +
				"    http:\n      audit_log: \"" + tt.auditLog + "\"\n"
			file := filepath.Join(dir, "snigate.yaml")
			must(t, os.WriteFile(file, []byte(yaml), 0o644))
			checkErr := Check(t.Context(), file, false, new(bytes.Buffer))
			if tt.want == "" {
				if checkErr != nil {
					t.Fatalf("check: %v, want no error", checkErr)
				}
				if _, err := os.Stat(filepath.Join(logDir, "audit.log")); err == nil {
					t.Error("check created the audit log")
				}
				return
			}
			if got := errorLines(t, checkErr, dir); !slices.Equal(got, []string{strings.ReplaceAll(tt.want, dir+"/", "")}) && !slices.Equal(got, []string{tt.want}) {
				t.Errorf("check errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), tt.want)
			}
			_, runErr := New(Options{ConfigFile: file, Logger: slog.New(slog.DiscardHandler)})
			if runErr == nil || runErr.Error() != checkErr.Error() {
				t.Errorf("run refuses the file with\n%v\ncheck with\n%v\nwant the same error", runErr, checkErr)
			}
		})
	}
}

func readOnly(t *testing.T, path string, mode os.FileMode) string {
	t.Helper()
	if mode&0o111 != 0 {
		must(t, os.Mkdir(path, mode))
	} else {
		must(t, os.WriteFile(path, nil, mode))
	}
	return path
}

// TestExposureWarnings is issue 27 item 2 and issue 26 item 14: an open
// resolver (the Quick start's own file), an admin API on every address,
// and a bridge route lending the edge identity to every client passed
// check in silence; check and run now warn at the key.
func TestExposureWarnings(t *testing.T) {
	dir := t.TempDir()
	checkPKI(t, dir)
	bridge := "routes:\n  - name: registry\n    sni: [reg.test]\n    mode: bridge\n    upstreams: [\"10.1.0.10:443\"]\n" +
		"    serve: {cert: serve.crt, key: serve.key}\n    upstream_tls: {cert: edge.crt, key: edge.key}\n"
	splice := "routes:\n  - name: git\n    sni: [git.test]\n    mode: splice\n    upstreams: [\"10.1.0.10:443\"]\n"
	dns := "dns:\n  answer: [10.0.0.5]\n  forward: [\"10.96.0.10:53\"]\n"
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{name: "open resolver", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n" + dns + splice, want: []string{
			`snigate.yaml:3: listen.dns: :53 is not a loopback address and dns.forward is set, with neither listen.allow nor dns.allow: an open resolver, which forwards any name for anyone on the network (amplification, cache snooping); set listen.allow (or dns.allow) to the nodes' networks, such as ["10.0.0.0/8"]`}},
		{name: "resolver limited by dns.allow", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n" + dns + "  allow: [10.0.0.0/8]\n" + splice},
		{name: "resolver limited by listen.allow", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n  allow: [10.0.0.0/8]\n" + dns + splice},
		{name: "resolver on loopback", yaml: "listen:\n  tls: [\":443\"]\n  dns: \"127.0.0.1:53\"\n" + dns + splice},
		{name: "responder without forward", yaml: "listen:\n  tls: [\":443\"]\n  dns: \":53\"\ndns:\n  answer: [10.0.0.5]\n" + splice},
		{name: "admin on every address", yaml: "listen:\n  tls: [\":443\"]\n  admin: \":9090\"\n" + splice, want: []string{
			"snigate.yaml:3: listen.admin: :9090: the admin API is unauthenticated and listens on a non-loopback address; restrict who can reach it (firewall, NetworkPolicy) or use 127.0.0.1 or unix:/run/snigate/admin.sock"}},
		{name: "admin on a unix socket", yaml: "listen:\n  tls: [\":443\"]\n  admin: \"unix:/run/snigate/admin.sock\"\n" + splice},
		{name: "bridge without http for every client", yaml: "listen:\n  tls: [\":443\"]\n" + bridge, want: []string{
			`snigate.yaml:4: routes[0]: bridge route "registry" has no http: section and listen.allow is empty: it presents the edge identity (upstream_tls.cert) to the registry for every client that reaches listen.tls, for any request; set listen.allow to the nodes' networks, such as ["10.0.0.0/8"], and add http: {} for its method and repository policy (or serve.client_ca)`}},
		{name: "bridge without http for listed clients", yaml: "listen:\n  tls: [\":443\"]\n  allow: [10.0.0.0/8]\n" + bridge},
		{name: "bridge with http", yaml: "listen:\n  tls: [\":443\"]\n" + bridge + "    http: {}\n"},
		{name: "bridge on loopback only", yaml: "listen:\n  tls: [\"127.0.0.1:443\"]\n" + bridge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "snigate.yaml")
			must(t, os.WriteFile(file, []byte(tt.yaml), 0o644))
			cfg, err := config.Load(file)
			must(t, err)
			var got []string
			for _, w := range ExposureWarnings(cfg) {
				got = append(got, strings.ReplaceAll(w.Error(), dir+"/", ""))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var out bytes.Buffer
			must(t, Check(t.Context(), file, false, &out))
			for _, w := range tt.want {
				if !strings.Contains(strings.ReplaceAll(out.String(), dir+"/", ""), "warning: "+w) {
					t.Errorf("check printed\n%s\nwithout the warning %s", out.String(), w)
				}
			}
		})
	}
}

// TestCheckRefusesAnAuditLogOnProc: root passes access(2) in /proc, so a
// new audit log there passed check and failed at run.
func TestCheckRefusesAnAuditLogOnProc(t *testing.T) {
	err := checkAuditLog("/proc/snigate-audit.log")
	if err == nil || !strings.Contains(err.Error(), "cannot create /proc/snigate-audit.log: ") {
		t.Errorf("checkAuditLog = %v, want cannot create", err)
	}
}

// TestRunWarnsAboutAnOpenResolver: the warnings check prints, run logs at
// start (issue 27 item 2: the Quick start's own file was an open resolver
// and nothing said so).
func TestRunWarnsAboutAnOpenResolver(t *testing.T) {
	w := newWorld(t, `listen:
  tls: ["127.0.0.1:0"]
  dns: "0.0.0.0:0"
dns:
  answer: [192.0.2.10]
  forward: ["192.0.2.53"]
routes:
  - name: git
    sni: [git.test]
    mode: splice
    upstreams: ["127.0.0.1:1"]
`)
	w.start()
	if !strings.Contains(w.logs.String(), `level=WARN msg="configuration warning" key=listen.dns detail=`) ||
		!strings.Contains(w.logs.String(), "an open resolver") {
		t.Errorf("no open resolver warning at start:\n%s", w.logs)
	}
}
