package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// containerd is a containerd daemon of the node with its own root, state,
// socket and configuration, so it shares nothing with the host's.
type containerd struct {
	dir      string
	socket   string
	hostsDir string // certs.d: one directory per registry host, with hosts.toml
	proc     *proc
}

// containerdConfig is config version 2. ctr pulls through the
// client-side resolver, configured by --hosts-dir; the CRI plugin (what
// the kubelet pulls through; crictl here) reads the same certs.d directory
// through registry.config_path, as on a real node. No CNI is configured:
// only its image service is used.
func containerdConfig(dir, socket, hostsDir string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = %q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), socket, socket+".ttrpc", hostsDir)
}

// hostsTOML makes containerd trust caFile for host, and only for it.
func hostsTOML(host, caFile string) string {
	return fmt.Sprintf(`server = "https://%[1]s"

[host."https://%[1]s"]
  capabilities = ["pull", "resolve"]
  ca = %[2]q
`, host, caFile)
}

func newContainerd(dir string) (*containerd, error) {
	c := &containerd{dir: dir, socket: filepath.Join(dir, "containerd.sock"), hostsDir: filepath.Join(dir, "certs.d")}
	if err := os.MkdirAll(c.hostsDir, 0o755); err != nil {
		return nil, err
	}
	cfg := containerdConfig(dir, c.socket, c.hostsDir)
	return c, os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644)
}

// trust writes certs.d/HOST/hosts.toml trusting caFile for host.
func (c *containerd) trust(host, caFile string) error {
	d := filepath.Join(c.hostsDir, host)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(hostsTOML(host, caFile)), 0o644)
}

// start runs containerd in ns and waits for its socket to answer.
func (c *containerd) start(ns *netns, logDir string) error {
	p, err := startProc("containerd", filepath.Join(logDir, "containerd.log"),
		ns.command("containerd", "--config", filepath.Join(c.dir, "config.toml")))
	if err != nil {
		return err
	}
	c.proc = p
	err = poll(startTries, pollStep, func() error {
		if !p.running() {
			return fmt.Errorf("%w: containerd exited: %v", errGaveUp, p.err)
		}
		conn, err := net.DialTimeout("unix", c.socket, time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	if err != nil {
		return fmt.Errorf("containerd: %w\n%s", err, p.tail(20))
	}
	if r := runCmd(c.ctr(ns, "version")); r.err != nil {
		return fmt.Errorf("containerd does not answer: %s", r)
	}
	return nil
}

// ctr returns `ctr --address SOCKET args...` run inside ns.
func (c *containerd) ctr(ns *netns, args ...string) *exec.Cmd {
	return ns.command(append([]string{"ctr", "--address", c.socket}, args...)...)
}

// imageDigest returns the target digest of ref in containerd's image store.
func (c *containerd) imageDigest(ns *netns, ref string) (string, error) {
	r := runCmd(c.ctr(ns, "images", "ls"))
	if r.err != nil {
		return "", fmt.Errorf("%s", r)
	}
	for _, line := range strings.Split(r.out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == ref {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("%s: no image %s", r, ref)
}
