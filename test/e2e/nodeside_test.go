package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// The node-side commands (the contract "Node-side commands"):
// `snigate node-config` output used as it is by ctr and skopeo, and
// `snigate doctor` on the node, working and broken.

// spegelHostsTOML is what another tool (Spegel) leaves in certs.d: its
// local mirror first, then the registry, and no certificate settings. In
// the node's namespace nothing listens on the mirror's port, so containerd
// moves on to the next host.
const spegelHostsTOML = `# written by spegel
server = "https://registry.example.test"

[host."http://127.0.0.1:30020"]
  capabilities = ["pull", "resolve"]
  dial_timeout = "200ms"
`

// nodeConfig runs `snigate node-config` on the gateway's own
// configuration into dir, after prepare (nil: none) put files there.
func (w *world) nodeConfig(t *testing.T, dir string, args ...string) {
	t.Helper()
	r := w.gw.snigate(append([]string{"node-config", "-c", w.gw.config, "--out", dir}, args...)...)
	if r.err != nil {
		t.Fatalf("node-config failed:\n%s", r)
	}
}

// TestNodeConfigUsedAsIs: the files node-config writes work as they are:
// ctr pulls with --hosts-dir pointing at its certs.d (merged with another
// tool's hosts.toml, whose mirror entry stays), skopeo pulls with the
// podman layout, and the resolver files send the routed names to the
// gateway.
func TestNodeConfigUsedAsIs(t *testing.T) {
	w := getWorld(t)
	dir := t.TempDir()
	hostsFile := filepath.Join(dir, "certs.d", registryHost, "hosts.toml")
	if err := os.MkdirAll(filepath.Dir(hostsFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hostsFile, []byte(spegelHostsTOML), 0o644); err != nil {
		t.Fatal(err)
	}
	w.nodeConfig(t, dir)

	t.Run("merge keeps the mirror entry", func(t *testing.T) {
		got, err := os.ReadFile(hostsFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`[host."http://127.0.0.1:30020"]`, `dial_timeout = "200ms"`, "# written by spegel", `ca = "snigate-ca.crt"`, `server = "https://registry.example.test"`} {
			if !strings.Contains(string(got), want) {
				t.Errorf("merged hosts.toml lacks %q:\n%s", want, got)
			}
		}
	})
	t.Run("ctr pulls with the certs.d tree as is", func(t *testing.T) {
		ref := imageRef(registryHost)
		runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
		r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", filepath.Join(dir, "certs.d"), ref))
		if r.err != nil {
			t.Fatalf("ctr pull with node-config's certs.d failed:\n%s", r)
		}
		got, err := w.ctrd.imageDigest(w.node, ref)
		if err != nil {
			t.Fatal(err)
		}
		if want := w.image.digest.String(); got != want {
			t.Fatalf("containerd has %s at %s, pushed %s\n%s", ref, got, want, r)
		}
	})
	t.Run("skopeo pulls with the podman layout", func(t *testing.T) {
		pod := t.TempDir()
		w.nodeConfig(t, pod, "--runtime", "podman")
		w.mustPullSkopeo(t, registryHost, filepath.Join(pod, "certs.d", registryHost))
	})
	t.Run("resolver files name the gateway", func(t *testing.T) {
		w.checkResolverFiles(t, dir)
	})
}

// checkResolverFiles: the resolver files node-config wrote in dir send
// every routed name to the gateway.
func (w *world) checkResolverFiles(t *testing.T, dir string) {
	t.Helper()
	names := strings.Join([]string{registryHost, mirrorHost, tokenHost, nodeHost, httpHost, cacheHost}, " ") // every route, in configuration order
	wants := map[string][]string{
		"resolved.conf.d/snigate.conf": {"DNS=" + bastionAddr + "\n", "Domains=~" + strings.ReplaceAll(names, " ", " ~") + "\n", "FallbackDNS=\n"},
		"hosts":                        {bastionAddr + " " + names + "\n"},
	}
	for file, want := range wants {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range want {
			if !strings.Contains(string(got), s) {
				t.Errorf("%s lacks %q:\n%s", file, s, got)
			}
		}
	}
}

// doctorRun runs `snigate doctor args...` on the node; it returns the
// output, the exit code and each step's line.
func (w *world) doctorRun(args ...string) (result, int, map[string]string) {
	r := runCmd(w.node.command(append([]string{w.gw.bin, "doctor"}, args...)...))
	code := 0
	if r.err != nil {
		code = -1
		if ee, ok := r.err.(interface{ ExitCode() int }); ok {
			code = ee.ExitCode()
		}
	}
	lines := map[string]string{}
	for _, l := range strings.Split(r.out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			lines[f[1]] = l
		}
	}
	return r, code, lines
}

// doctorCase is one doctor run and what it must say.
type doctorCase struct {
	name     string
	args     []string
	failStep string   // "": exit 0 and no FAIL line
	want     []string // text of the output
}

func (w *world) checkDoctor(t *testing.T, tt doctorCase) {
	t.Helper()
	r, code, lines := w.doctorRun(tt.args...)
	wantCode := 0
	if tt.failStep != "" {
		wantCode = 1
	}
	if code != wantCode {
		t.Errorf("exit %d, want %d", code, wantCode)
	}
	if n := strings.Count(r.out, "\nFAIL ") + boolInt(strings.HasPrefix(r.out, "FAIL ")); n != wantCode {
		t.Errorf("%d FAIL lines, want %d", n, wantCode)
	}
	if tt.failStep != "" && !strings.HasPrefix(lines[tt.failStep], "FAIL") {
		t.Errorf("step %s did not fail", tt.failStep)
	}
	for _, s := range tt.want {
		if !strings.Contains(r.out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("%s", r)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDoctor runs doctor on the node: exit 0 where a pull works, and for
// each broken setup a FAIL at the step that is broken, with its advice.
func TestDoctor(t *testing.T) {
	w := getWorld(t)
	nodeFiles := t.TempDir()
	w.nodeConfig(t, nodeFiles)
	certsD := filepath.Join(nodeFiles, "certs.d")
	w.startOtherResolver(t)
	twoServers := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(twoServers, []byte("nameserver "+bastionAddr+"\nnameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []doctorCase{
		{name: "working node", args: []string{imageRef(registryHost), "--certs-dir", certsD},
			want: []string{"ok   resolver " + bastionAddr + ":53", "ok   dns      " + registryHost + ": " + bastionAddr, "ok   tcp      connected to " + bastionAddr + ":443",
				"ok   tls", "trusted by " + filepath.Join(certsD, registryHost, "snigate-ca.crt"), "ok   http     GET /v2/: 200", "ok   realm    none", "ok   redirect none: blob sha256:"}},
		{name: "CA missing", args: []string{registryHost, "--certs-dir", t.TempDir()}, failStep: "tls",
			want: []string{"is not trusted by system roots", "fix: trust the gateway's CA: install certs.d/" + registryHost}},
		{name: "realm host not routed", args: []string{tokenHost, "--ca", w.registryCA.file}, failStep: "realm",
			want: []string{"ok   http     GET /v2/: 401", "token realm https://" + realmHost + "/token", realmHost + " does not resolve", "REFUSED",
				"fix: send " + realmHost + " through the gateway too: add it to a route's sni"}},
		{name: "resolver pointing elsewhere", args: []string{registryHost, "--dns", "127.0.0.1", "--certs-dir", certsD, "--timeout", "2s"}, failStep: "tcp",
			want: []string{"ok   dns      " + registryHost + ": " + hostOf(registryAAddr), "fix: the node has no route to " + hostOf(registryAAddr) + ": if that is the registry's own address, the resolver bypasses the gateway"}},
		{name: "a second nameserver answers differently", args: []string{registryHost, "--resolv-conf", twoServers, "--certs-dir", certsD}, failStep: "resolver",
			want: []string{"they disagree on " + registryHost, "127.0.0.1:53 answers " + hostOf(registryAAddr), "fix: a lookup that reaches another server bypasses the gateway"}},
	} {
		t.Run(tt.name, func(t *testing.T) { w.checkDoctor(t, tt) })
	}
}

// startOtherResolver runs dnsmasq on 127.0.0.1:53 in the node's
// namespace, answering the registry's name with the registry's own
// address: a resolver that bypasses the gateway.
func (w *world) startOtherResolver(t *testing.T) {
	t.Helper()
	p, err := startProc("dnsmasq", filepath.Join(w.logs, "dnsmasq.log"), w.node.command("dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts",
		"--listen-address=127.0.0.1", "--bind-interfaces", "--port=53", "--pid-file=", "--log-facility=-",
		"--address=/"+registryHost+"/"+hostOf(registryAAddr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop() })
	err = poll(startTries, pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: dnsmasq exited: %v", errGaveUp, p.err)
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(registryHost), dns.TypeA)
		return w.node.do(func() error {
			_, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, "127.0.0.1:53")
			return err
		})
	})
	if err != nil {
		t.Fatalf("dnsmasq: %v\n%s", err, p.tail(20))
	}
}

// TestDoctorGatewayDown stops the gateway: doctor fails at dns (the
// gateway is the node's resolver) and, with the name in /etc/hosts, at
// tcp; each says to look at snigate. The gateway is started again after.
func TestDoctorGatewayDown(t *testing.T) {
	w := getWorld(t)
	nodeFiles := t.TempDir()
	w.nodeConfig(t, nodeFiles)
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte(bastionAddr+" "+registryHost+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.gw.proc.stop(); err != nil {
		t.Fatalf("snigate did not exit 0 on SIGTERM: %v", err)
	}
	t.Cleanup(func() {
		err := w.gw.start()
		w.procs = append(w.procs, w.gw.proc)
		if err == nil {
			err = w.gw.waitAllHealthy()
		}
		if err != nil {
			t.Errorf("restarting the gateway: %v", err)
		}
	})
	certsD := filepath.Join(nodeFiles, "certs.d")
	for _, tt := range []doctorCase{
		{name: "resolver is the gateway", args: []string{registryHost, "--certs-dir", certsD, "--timeout", "1s"}, failStep: "dns",
			want: []string{"fix: the resolver does not answer: if it is the gateway's DNS responder, snigate may be down there"}},
		{name: "name in /etc/hosts", args: []string{registryHost, "--certs-dir", certsD, "--hosts-file", hosts, "--timeout", "1s"}, failStep: "tcp",
			want: []string{"connection refused", "fix: nothing listens on " + bastionAddr + " port 443: start snigate there"}},
	} {
		t.Run(tt.name, func(t *testing.T) { w.checkDoctor(t, tt) })
	}
}
