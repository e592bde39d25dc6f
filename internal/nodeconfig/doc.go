// Package nodeconfig makes the files a node needs to pull through snigate:
// containerd's certs.d/<host>/hosts.toml (merged with one that is already
// there) and the CA file beside it, the docker and podman certs.d layouts,
// a systemd-resolved drop-in that sends the routed names to the gateway's
// DNS responder and nowhere else, /etc/hosts lines, and k3s/RKE2
// registries.yaml.
//
// HostsTOML is the one generator of containerd's hosts.toml (a
// [host."https://NAME"] table that containerd 1.6 reads, the same keys at
// the top level); TrustInstructions, `snigate ca init`'s recipe, prints
// its file. Write and ReadDir follow no symbolic link below the output
// directory (ErrSymlink).
//
// It does not read snigate's configuration file: the caller (internal/gateway)
// fills a Config from it.
//
//	files, err := nodeconfig.Build(cfg, nodeconfig.ReadDir(out))
//	if err != nil { ... }
//	if err := nodeconfig.Write(out, files); err != nil { ... }
//	nodeconfig.WriteSummary(os.Stdout, out, cfg.Runtime, files)
package nodeconfig
