package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// registry is one docker-registry (distribution 2.8) instance in the
// registry namespace. Instances share one storage directory.
type registry struct {
	name   string
	addr   string // ip:443 inside the registry namespace
	config string // its config.yml
	proc   *proc
}

// registryConfig is distribution's config.yml. clientCAs empty: plain TLS.
func registryConfig(addr, storage string, tls keyPair, clientCAs ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
health:
  storagedriver:
    enabled: false
http:
  addr: %s
  secret: snigate-e2e-shared-upload-secret
  tls:
    certificate: %s
    key: %s
`, storage, addr, tls.certFile, tls.keyFile)
	if len(clientCAs) > 0 {
		b.WriteString("    clientcas:\n")
		for _, c := range clientCAs {
			fmt.Fprintf(&b, "      - %s\n", c)
		}
	}
	return b.String()
}

// newRegistry writes the instance's configuration; start runs it.
func newRegistry(dir, name, addr, storage string, tls keyPair, clientCAs ...string) (*registry, error) {
	r := &registry{name: name, addr: addr, config: filepath.Join(dir, name+".yml")}
	err := os.WriteFile(r.config, []byte(registryConfig(addr, storage, tls, clientCAs...)), 0o644)
	return r, err
}

// start runs the instance in ns and waits until it accepts connections.
func (r *registry) start(ns *netns, logDir string) error {
	p, err := startProc(r.name, filepath.Join(logDir, r.name+".log"),
		ns.command("docker-registry", "serve", r.config))
	if err != nil {
		return err
	}
	r.proc = p
	if err := waitTCP(ns, r.addr, p); err != nil {
		return fmt.Errorf("registry %s: %w\n%s", r.name, err, p.tail(20))
	}
	return nil
}

// newTokenRegistry is a registry (plain TLS, certificate from the
// registry CA) that wants a bearer token from realmHost, a host the
// gateway does not route: what `snigate doctor` must catch.
func (w *world) newTokenRegistry(pki, storage string) (*registry, error) {
	kp, err := w.registryCA.issue(pki, "tokenreg", tokenHost, hostOf(tokenRegAddr))
	if err != nil {
		return nil, err
	}
	r := &registry{name: "tokenreg", addr: tokenRegAddr, config: filepath.Join(w.dir, "tokenreg.yml")}
	cfg := registryConfig(tokenRegAddr, storage, kp) + fmt.Sprintf(`auth:
  token:
    realm: https://%s/token
    service: e2e-token
    issuer: e2e
    rootcertbundle: %s
`, realmHost, w.registryCA.file)
	return r, os.WriteFile(r.config, []byte(cfg), 0o644)
}
