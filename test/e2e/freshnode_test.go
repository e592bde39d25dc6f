package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeFailure is what containerd (daemon or ctr) logs for a hosts.toml it
// cannot read; it then pulls from the registry name with no CA and no
// client certificate (containerd 1.6: "invalid host tree" for a file with
// no [host] table).
const decodeFailure = "failed to decode hosts.toml"

// TestNodeConfigFreshContainerd: a node with its own containerd (the
// distribution's, 1.6 on Debian 12), nothing in certs.d and an empty
// content store, gets node-config's files and nothing else: the CRI pull
// (the daemon reads config_path) and ctr --hosts-dir fetch every blob of
// the image through the gateway, on the plain bridge route and on the
// route that requires node identity (the client certificate comes from
// hosts.toml alone), and no containerd log line says it could not decode
// a hosts.toml.
func TestNodeConfigFreshContainerd(t *testing.T) {
	w := getWorld(t)
	c, logFile := w.freshContainerd(t)
	if ents, _ := os.ReadDir(c.hostsDir); len(ents) != 0 {
		t.Fatalf("certs.d of the fresh node is not empty: %v", ents)
	}
	for _, ns := range []string{"default", "k8s.io"} {
		if blobs := c.contentDigests(t, w.node, ns); len(blobs) != 0 {
			t.Fatalf("content store (namespace %s) of the fresh node is not empty: %v", ns, blobs)
		}
	}
	// --client-cert: the node's certificate (the kubelet's combined PEM
	// layout) instead of the kubelet's path, which this host does not have.
	w.nodeConfig(t, c.dir, "--client-cert", w.nodes.worker1PEM)
	crictl := func(args ...string) result {
		return runCmd(w.node.command(append([]string{"crictl", "--runtime-endpoint", "unix://" + c.socket,
			"--image-endpoint", "unix://" + c.socket, "--timeout", "60s"}, args...)...))
	}
	// Each pull starts from an empty content store, so that it has to
	// fetch every blob through the gateway (containerd shares a blob
	// between namespaces instead of fetching it again).
	for _, host := range []string{registryHost, nodeHost} {
		t.Run("CRI pull from "+host, func(t *testing.T) {
			ref := imageRef(host)
			if r := crictl("pull", ref); r.err != nil {
				t.Fatalf("CRI pull failed:\n%s\n%s", r, tailFile(logFile, 30))
			}
			w.checkFetched(t, c, "k8s.io")
			if r := crictl("rmi", ref); r.err != nil {
				t.Fatalf("%s", r)
			}
			if blobs := c.contentDigests(t, w.node, "k8s.io"); len(blobs) != 0 {
				t.Fatalf("content left after crictl rmi: %v", blobs)
			}
		})
	}
	t.Run("ctr --hosts-dir from "+nodeHost, func(t *testing.T) {
		r := runCmd(c.ctr(w.node, "images", "pull", "--hosts-dir", c.hostsDir, imageRef(nodeHost)))
		if r.err != nil {
			t.Fatalf("ctr pull failed:\n%s", r)
		}
		if strings.Contains(r.out, decodeFailure) {
			t.Errorf("ctr says %q:\n%s", decodeFailure, r)
		}
		w.checkFetched(t, c, "default")
	})
	t.Run("containerd decoded every hosts.toml", func(t *testing.T) {
		b, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, decodeFailure) {
				t.Errorf("containerd log: %s", line)
			}
		}
	})
}

// freshContainerd starts a containerd of its own in the node's namespace:
// new root, state and socket, config_path pointing at its empty certs.d.
// It returns the daemon and its log file; it is stopped at the end of t.
func (w *world) freshContainerd(t *testing.T) (*containerd, string) {
	t.Helper()
	// a short directory: the socket's path must fit sun_path
	dir, err := os.MkdirTemp("", "ctrd-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c, err := newContainerd(dir)
	must(t, err)
	logs := filepath.Join(dir, "logs")
	must(t, os.MkdirAll(logs, 0o755))
	err = c.start(w.node, logs)
	if c.proc != nil {
		t.Cleanup(func() { _ = c.proc.stop() })
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, filepath.Join(logs, "containerd.log")
}

// contentDigests lists the digests in c's content store, namespace ns.
func (c *containerd) contentDigests(t *testing.T, n *netns, ns string) []string {
	t.Helper()
	r := runCmd(c.ctr(n, "--namespace", ns, "content", "ls", "--quiet"))
	if r.err != nil {
		t.Fatalf("%s", r)
	}
	return strings.Fields(r.out)
}

// checkFetched fails t unless every blob of the test image (manifest,
// config, layers: the OCI layout it was pushed from) is now in c's content
// store, namespace ns.
func (w *world) checkFetched(t *testing.T, c *containerd, ns string) {
	t.Helper()
	have := map[string]bool{}
	for _, d := range c.contentDigests(t, w.node, ns) {
		have[d] = true
	}
	ents, err := os.ReadDir(filepath.Join(w.image.layout, "blobs", "sha256"))
	must(t, err)
	if len(ents) == 0 {
		t.Fatal("the test image has no blobs")
	}
	for _, e := range ents {
		if d := "sha256:" + e.Name(); !have[d] {
			t.Errorf("blob %s of the image was not fetched into the content store (namespace %s)", d, ns)
		}
	}
}
