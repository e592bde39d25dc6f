package nodeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// Existing returns the current contents of a file Build is about to make,
// by its File.Path; an error wrapping fs.ErrNotExist means there is none.
type Existing func(path string) ([]byte, error)

// ReadDir is the Existing of output directory dir: what a previous run,
// or another tool, left there (for example dir = /etc/containerd). As
// Write, it follows no symbolic link below dir (ErrSymlink).
func ReadDir(dir string) Existing {
	return func(p string) ([]byte, error) {
		parent, name, err := splitBelow(p)
		if err != nil {
			return nil, err
		}
		d, err := openBelow(dir, parent, false)
		if err != nil {
			return nil, err
		}
		defer d.close()
		return d.read(name)
	}
}

// Build returns the files of c, a hosts.toml merged with the one existing
// holds at the same place (nil existing: none). It fails on an existing
// hosts.toml that does not parse, rather than overwrite it.
func Build(c Config, existing Existing) ([]File, error) {
	if existing == nil {
		existing = func(string) ([]byte, error) { return nil, fs.ErrNotExist }
	}
	var files []File
	for _, h := range c.Hosts {
		hf, err := hostFiles(c, h, existing)
		if err != nil {
			return nil, err
		}
		files = append(files, hf...)
	}
	return append(files, nodeFiles(c)...), nil
}

// certsDirs is where each runtime reads certs.d on the node.
var certsDirs = map[Runtime]string{
	RuntimeContainerd: "/etc/containerd/certs.d",
	RuntimeDocker:     "/etc/docker/certs.d",
	RuntimePodman:     "/etc/containers/certs.d",
}

// hostFiles are the certs.d files of one host for c's runtime: for
// containerd and Docker Hub's registry host, in the docker.io namespace
// too (certs.d/docker.io: what containerd reads for docker.io/...
// references, the name images are pulled by).
func hostFiles(c Config, h Host, existing Existing) ([]File, error) {
	files, err := hostFilesIn(c, h, h.dir(c.runtime()), existing)
	if err != nil || c.runtime() != RuntimeContainerd || !h.dockerHub() {
		return files, err
	}
	hub, err := hostFilesIn(c, h, DockerHubNamespace, existing)
	return append(files, hub...), err
}

// hostFilesIn are h's certs.d files in the directory dir.
func hostFilesIn(c Config, h Host, dir string, existing Existing) ([]File, error) {
	rt := c.runtime()
	rel := path.Join("certs.d", dir)
	dest := path.Join(certsDirs[rt], dir)
	var files []File
	if h.CA != nil {
		files = append(files, File{Path: path.Join(rel, CAFile), Dest: path.Join(dest, CAFile), Data: h.CA, Mode: 0o644,
			Note: "the CA of the gateway's certificate for " + h.Registry()})
	}
	if rt != RuntimeContainerd {
		return append(files, clientLinks(c, h, rel, dest)...), nil
	}
	toml, note, err := mergedHostsTOML(c, h, path.Join(rel, "hosts.toml"), existing)
	if err != nil {
		return nil, err
	}
	return append(files, File{Path: path.Join(rel, "hosts.toml"), Dest: path.Join(dest, "hosts.toml"), Data: toml, Mode: 0o644, Note: note}), nil
}

// mergedHostsTOML is h's hosts.toml, merged with the existing one at p.
func mergedHostsTOML(c Config, h Host, p string, existing Existing) ([]byte, string, error) {
	old, err := existing(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return hostsTOML(c, h), "new; containerd reads it at the next pull, no restart", nil
	case err != nil:
		return nil, "", fmt.Errorf("read the existing %s: %w", p, err)
	}
	merged, err := mergeHostsTOML(old, c, h)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w: fix it or move it away, then run node-config again", p, err)
	}
	return merged, "merged: server, ca and client set, every other entry kept", nil
}

// clientLinks are docker's and podman's client.cert and client.key: links
// to the node's own certificate and key.
func clientLinks(c Config, h Host, rel, dest string) []File {
	if !c.wantsClient(h) {
		return nil
	}
	key := c.ClientKey
	if key == "" {
		key = c.clientCert()
	}
	return []File{
		{Path: path.Join(rel, "client.cert"), Dest: path.Join(dest, "client.cert"), Link: c.clientCert(), Note: "the node's client certificate (route requires node identity)"},
		{Path: path.Join(rel, "client.key"), Dest: path.Join(dest, "client.key"), Link: key, Note: "its key"},
	}
}

// nodeFiles are the files beside certs.d: registries.yaml and its CA
// files (containerd runtime only), the resolved drop-in, /etc/hosts lines.
func nodeFiles(c Config) []File {
	var files []File
	if c.runtime() == RuntimeContainerd && len(c.Hosts) > 0 {
		for _, h := range c.Hosts {
			if h.CA != nil {
				files = append(files, File{Path: path.Join("rancher", h.dir(RuntimeDocker), CAFile), Dest: rancherCAFile(h), Data: h.CA, Mode: 0o644,
					Note: "k3s/RKE2 only: the CA registries.yaml names"})
			}
		}
		files = append(files, File{Path: "registries.yaml", Dest: "/etc/rancher/k3s/registries.yaml", Data: registriesYAML(c), Mode: 0o644,
			Note: "k3s/RKE2 only (RKE2: /etc/rancher/rke2/registries.yaml), in place of certs.d"})
	}
	if len(c.DNSServers) > 0 && len(c.Names) > 0 {
		files = append(files, File{Path: "resolved.conf.d/snigate.conf", Dest: "/etc/systemd/resolved.conf.d/snigate.conf", Data: resolvedDropIn(c), Mode: 0o644,
			Note: "systemd-resolved: then systemctl restart systemd-resolved"})
	}
	if len(c.Answers) > 0 && len(c.Names) > 0 {
		files = append(files, File{Path: "hosts", Dest: "/etc/hosts", Data: etcHosts(c), Mode: 0o644,
			Note: "append, only where the resolver cannot be changed"})
	}
	return files
}
