package deploy

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// debContents are paths the package must carry (dpkg-deb -c).
var debContents = []string{
	"./usr/bin/snigate",
	"./usr/lib/systemd/system/snigate.service",
	"./usr/lib/sysusers.d/snigate.conf",
	"./etc/snigate/snigate.yaml",
	"./usr/share/man/man1/snigate.1.gz",
	"./usr/share/man/man1/snigate-run.1.gz",
	"./usr/share/man/man1/snigate-ctl.1.gz",
	"./usr/share/bash-completion/completions/snigate",
	"./usr/share/zsh/vendor-completions/_snigate",
	"./usr/share/fish/vendor_completions.d/snigate.fish",
	"./usr/share/doc/snigate/copyright",
	"./usr/share/doc/snigate/CHANGELOG.md",
	"./usr/share/doc/snigate/configuration.md",
	"./usr/share/doc/snigate/snigate.schema.json",
}

// runTool runs a command and fails the test with its output on error.
func runTool(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// needRootDpkg skips (fails with SNIGATE_REQUIRE_E2E) unless the test can
// install a package: root, dpkg, and no snigate package installed already
// (an operator's is never replaced).
func needRootDpkg(t *testing.T) {
	t.Helper()
	needTool(t, "dpkg", "dpkg")
	needTool(t, "make", "make")
	why := ""
	switch {
	case os.Geteuid() != 0:
		why = "not root"
	case exec.Command("dpkg", "-s", "snigate").Run() == nil:
		why = "a snigate package is installed already"
	}
	if why == "" {
		return
	}
	if os.Getenv("SNIGATE_REQUIRE_E2E") != "" && why == "not root" {
		t.Fatalf("cannot install the package (%s) and SNIGATE_REQUIRE_E2E is set", why)
	}
	t.Skipf("not installing the package: %s", why)
}

// TestDebPackage builds the .deb as `make deb` does, checks what it
// carries, installs it with dpkg (purged at the end) and runs the
// installed binary: `snigate version`, and `snigate check` of the
// installed example configuration (its certificate paths pointed at test
// files, as TestExampleConfigsPassSnigateCheck does).
func TestDebPackage(t *testing.T) {
	needRootDpkg(t)
	deb := filepath.Join(t.TempDir(), "snigate.deb")
	runTool(t, "..", "make", "deb", "DEB_FILE="+deb)

	listing := runTool(t, ".", "dpkg-deb", "-c", deb)
	var paths []string
	for _, line := range strings.Split(listing, "\n") {
		if f := strings.Fields(line); len(f) >= 6 {
			paths = append(paths, f[5])
		}
	}
	for _, want := range debContents {
		if !slices.Contains(paths, want) {
			t.Errorf("dpkg-deb -c: no %s in the package:\n%s", want, listing)
		}
	}
	if conf := runTool(t, ".", "dpkg-deb", "-f", deb, "Package", "Version", "Architecture"); !strings.Contains(conf, "Package: snigate") {
		t.Errorf("control fields:\n%s", conf)
	}

	_, userExisted := lookupUser("snigate")
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "snigate").CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge snigate: %v\n%s", err, out)
		}
		if !userExisted {
			exec.Command("userdel", "snigate").Run()
			exec.Command("groupdel", "snigate").Run()
		}
	})
	runTool(t, ".", "dpkg", "-i", deb)
	checkInstalled(t)
}

// checkInstalled runs the installed files.
func checkInstalled(t *testing.T) {
	version := runTool(t, ".", "/usr/bin/snigate", "version")
	if !strings.HasPrefix(version, "snigate v") || strings.Contains(version, "commit:   unknown") {
		t.Errorf("installed snigate version: want a stamped version and commit, got\n%s", version)
	}
	if out := runTool(t, ".", "/usr/bin/snigate", "--help"); !strings.Contains(out, "Available Commands:") {
		t.Errorf("installed snigate --help:\n%s", out)
	}

	text := string(readFile(t, "/etc/snigate/snigate.yaml"))
	cfg, err := parseGatewayConfig([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if out := runTool(t, ".", "/usr/bin/snigate", "check", "-c", localCopy(t, text, cfg)); !strings.Contains(out, "configuration OK") {
		t.Errorf("installed snigate check:\n%s", out)
	}

	unit := string(readFile(t, "/usr/lib/systemd/system/snigate.service"))
	if strings.Contains(unit, "/usr/local/bin/") || !strings.Contains(unit, "ExecStart=/usr/bin/snigate run -c /etc/snigate/snigate.yaml") {
		t.Errorf("installed unit does not run /usr/bin/snigate:\n%s", unit)
	}
	if tool, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(tool, "verify", "/usr/lib/systemd/system/snigate.service").CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify of the installed unit: %v\n%s", err, out)
		}
	}
	if _, ok := lookupUser("snigate"); !ok {
		t.Errorf("postinst created no snigate user")
	}
	if page := gunzip(t, "/usr/share/man/man1/snigate-check.1.gz"); !strings.Contains(page, "--probe") {
		t.Errorf("snigate-check.1 does not describe --probe:\n%.400s", page)
	}
}

// lookupUser reports whether name is in the passwd database.
func lookupUser(name string) (string, bool) {
	out, err := exec.Command("getent", "passwd", name).Output()
	return string(out), err == nil
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
