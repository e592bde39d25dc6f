package main

import (
	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/gateway"
	"github.com/snigate/snigate/internal/nodeconfig"
)

// defaultNodeOut is node-config's output directory without --out.
const defaultNodeOut = "snigate-node"

func newNodeConfigCmd(a *app) *cobra.Command {
	var file, out, runtime string
	var opt gateway.NodeOptions
	cmd := &cobra.Command{
		Use:   "node-config -c FILE [--out DIR] [--runtime containerd|docker|podman]",
		Short: "Write the files a node needs: certs.d hosts.toml and CA, resolved drop-in, hosts lines",
		Long: `Write, from the gateway's configuration FILE, the files a node needs to pull
through the gateway with no proxy setting, and print what to copy where:

  DIR/certs.d/<host>/hosts.toml   containerd (1.6 and later): a
                                  [host."https://<host>"] table with
                                  capabilities, ca and client (the same at the
                                  top level), and the CA file it names beside
                                  it (paths relative to its own directory, as
                                  containerd resolves them): copy the tree to
                                  /etc/containerd/certs.d/, or use
                                  ctr --hosts-dir DIR/certs.d
  DIR/registries.yaml             k3s and RKE2, with DIR/rancher/<host>/
  DIR/resolved.conf.d/snigate.conf  a systemd-resolved drop-in sending the
                                  routed names to the gateways' DNS
  DIR/hosts                       /etc/hosts lines, where DNS is not an option

An existing hosts.toml in DIR is merged. Nothing below DIR is followed: a
symbolic link there is refused. With --runtime docker or podman, certs.d has
those engines' layout instead and no hosts.toml: certs.d/<host>/snigate-ca.crt
and, for routes that require node identity, client.cert and client.key links
to the node's certificate (docker: /etc/docker/certs.d/, podman:
/etc/containers/certs.d/).`,
		Example: `  snigate node-config -c /etc/snigate/snigate.yaml --out ./node
  snigate node-config -c /etc/snigate/snigate.yaml --runtime docker`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("-c FILE is required")
			}
			rt, err := nodeconfig.ParseRuntime(runtime)
			if err != nil {
				return usageErrorf("%v", err)
			}
			opt.Runtime, opt.ClientAll = rt, opt.ClientCert != ""
			return failed(gateway.WriteNodeConfig(file, out, opt, a.stdout))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "config", "c", "", "the gateway's configuration file (required)")
	f.StringVar(&out, "out", defaultNodeOut, "directory to write the node files to (an existing hosts.toml there is merged)")
	f.StringVar(&runtime, "runtime", string(nodeconfig.RuntimeContainerd), "certs.d layout: containerd, docker or podman")
	f.StringVar(&opt.CA, "ca", "", "PEM file nodes trust for every bridge route (default: serve.ca_cert, else the top of serve.cert's chain)")
	f.StringVar(&opt.ClientCert, "client-cert", "", "the node's client certificate, named for every host (default: only for routes that require node identity, "+nodeconfig.DefaultClientCert+")")
	f.StringVar(&opt.ClientKey, "client-key", "", "its key (default: in the --client-cert file)")
	return cmd
}
