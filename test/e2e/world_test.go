package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The world's names and addresses. Only 10.77.x, only inside namespaces
// this suite creates: nothing is bound in the root namespace.
const (
	registryHost = "registry.example.test" // bridge route: registry with mTLS
	mirrorHost   = "mirror.example.test"   // splice route: registry with plain TLS
	tokenHost    = "tokenreg.example.test" // splice route: registry with token auth
	realmHost    = "auth.example.test"     // its token realm's host: no route
	unroutedHost = "nothere.example.test"  // no route: must fail
	// httpHost is the HTTP-aware bridge route (routes[].http) to the same
	// registries; only httpAllowed repositories are let through.
	httpHost    = "pull.registry.example.test"
	httpAllowed = "e2e/*"
	// cacheHost is the HTTP route with http.cache (route "cache") to the
	// same registries.
	cacheHost = "cache.registry.example.test"

	nodeAddr      = "10.77.1.2"
	bastionAddr   = "10.77.1.1" // the gateway, as the node sees it
	bastionUpAddr = "10.77.2.1" // the bastion on the registry side
	registryAAddr = "10.77.2.10:443"
	registryBAddr = "10.77.2.11:443"
	mirrorAddr    = "10.77.2.20:443"
	tokenRegAddr  = "10.77.2.30:443"
	adminAddr     = "127.0.0.1:9090" // inside the bastion namespace
	connectPort   = 3128
	keepEnv       = "SNIGATE_E2E_KEEP" // 1: keep the world's directory
)

// world is the whole set-up, built once and shared by the tests:
//
//	node (containerd, skopeo)  --10.77.1.0/24--  bastion (snigate)  --10.77.2.0/24--  registry
//	resolv.conf -> bastion                       :443 :53 :3128                       A .10, B .11 (mTLS)
//	no route to 10.77.2.0/24                     admin 127.0.0.1:9090                 mirror .20 (TLS)
type world struct {
	dir  string // everything: logs, PKI, configs, storage
	home string // HOME and containers config of client commands
	logs string // every process's output

	nsList                  []*netns
	node, bastion, registry *netns
	procs                   []*proc

	regA, regB, mirror *registry
	tokenReg           *registry // token auth, realm on realmHost
	image              *testImage
	gw                 *gateway
	ctrd               *containerd

	gatewayCerts string // certs.d-style dir trusting the gateway's CA (skopeo --src-cert-dir)
	mirrorCerts  string // ... trusting the mirror registry's CA
	emptyCerts   string // ... trusting nothing but the system roots
	registryCA   *ca
	mirrorCA     *ca
	edge         keyPair
	nodes        *nodeIdentity // the node CA, node certificates and CRL of route nodes
	spec         gatewaySpec   // what the gateway's configuration file says
}

// build makes the world; on error, what was made is still torn down.
func (w *world) build() error {
	steps := []struct {
		name string
		fn   func() error
	}{
		{"directories", w.makeDirs},
		{"snigate binary", w.buildGateway},
		{"namespaces", w.makeNamespaces},
		{"certificates", w.makePKI},
		{"registries", w.startRegistries},
		{"test image", w.pushImage},
		{"node identity", w.makeNodeIdentity},
		{"gateway", w.startGateway},
		{"containerd", w.startContainerd},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func (w *world) makeDirs() error {
	dir, err := os.MkdirTemp("", "snigate-e2e-")
	if err != nil {
		return err
	}
	w.dir, w.home, w.logs = dir, filepath.Join(dir, "home"), filepath.Join(dir, "logs")
	for _, d := range []string{w.home, w.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// No mirrors and no search registries from the host.
	return os.WriteFile(filepath.Join(w.home, "registries.conf"), []byte("unqualified-search-registries = []\n"), 0o644)
}

func (w *world) buildGateway() error {
	bin, err := buildSnigate(w.dir)
	w.gw = &gateway{bin: bin, config: filepath.Join(w.dir, "snigate.yaml"), log: filepath.Join(w.logs, "snigate.log")}
	return err
}

// makeNamespaces builds node <-> bastion <-> registry. The bastion does not
// forward packets and the node has no route beyond 10.77.1.0/24.
func (w *world) makeNamespaces() error {
	for _, role := range []string{"node", "bastion", "registry"} {
		ns, err := newNetns(role)
		if ns != nil {
			w.nsList = append(w.nsList, ns)
		}
		if err != nil {
			return err
		}
	}
	w.node, w.bastion, w.registry = w.nsList[0], w.nsList[1], w.nsList[2]
	w.gw.ns = w.bastion
	if err := vethPair(w.node, "to-bastion", []string{nodeAddr + "/24"},
		w.bastion, "to-node", []string{bastionAddr + "/24"}); err != nil {
		return err
	}
	regAddrs := []string{hostOf(registryAAddr) + "/24", hostOf(registryBAddr) + "/24", hostOf(mirrorAddr) + "/24", hostOf(tokenRegAddr) + "/24"}
	if err := vethPair(w.bastion, "to-registry", []string{bastionUpAddr + "/24"},
		w.registry, "to-bastion", regAddrs); err != nil {
		return err
	}
	if err := run("ip", "netns", "exec", w.bastion.name, "sysctl", "-qw", "net.ipv4.ip_forward=0"); err != nil {
		return err
	}
	return w.node.writeEtc("resolv.conf", fmt.Sprintf("nameserver %s\noptions timeout:2 attempts:2\n", bastionAddr))
}

func hostOf(hostport string) string {
	h, _, _ := strings.Cut(hostport, ":")
	return h
}

// makePKI: the registry's CA and server certificates, the edge CA the
// registry trusts for clients and the edge client certificate, the
// mirror's own CA, and skopeo's certs.d-style directories.
func (w *world) makePKI() error {
	pki := filepath.Join(w.dir, "pki")
	if err := os.MkdirAll(pki, 0o755); err != nil {
		return err
	}
	var err error
	if w.registryCA, err = newCA(pki, "registry"); err != nil {
		return err
	}
	edgeCA, err := newCA(pki, "edge")
	if err != nil {
		return err
	}
	if w.edge, err = edgeCA.issue(pki, "edge-client"); err != nil {
		return err
	}
	w.mirrorCA, err = newCA(pki, "mirror")
	return err
}

func (w *world) startRegistries() error {
	pki := filepath.Join(w.dir, "pki")
	storage := filepath.Join(w.dir, "storage")
	regTLS, err := w.registryCA.issue(pki, "registry", registryHost, hostOf(registryAAddr), hostOf(registryBAddr))
	if err != nil {
		return err
	}
	mirTLS, err := w.mirrorCA.issue(pki, "mirror", mirrorHost, hostOf(mirrorAddr))
	if err != nil {
		return err
	}
	edgeCA := filepath.Join(pki, "edge-ca.crt")
	if w.regA, err = newRegistry(w.dir, "registry-a", registryAAddr, storage, regTLS, edgeCA); err != nil {
		return err
	}
	if w.regB, err = newRegistry(w.dir, "registry-b", registryBAddr, storage, regTLS, edgeCA); err != nil {
		return err
	}
	if w.mirror, err = newRegistry(w.dir, "mirror", mirrorAddr, storage, mirTLS); err != nil {
		return err
	}
	if w.mirrorCerts, err = certsDir(w.dir, "certs-mirror", w.mirrorCA.file, nil); err != nil {
		return err
	}
	if w.tokenReg, err = w.newTokenRegistry(pki, storage); err != nil {
		return err
	}
	for _, r := range []*registry{w.regA, w.regB, w.mirror, w.tokenReg} {
		if err := w.startRegistry(r); err != nil {
			return err
		}
	}
	return nil
}

// startRegistry starts (or restarts) r in the registry namespace.
func (w *world) startRegistry(r *registry) error {
	err := r.start(w.registry, w.logs)
	if r.proc != nil {
		w.procs = append(w.procs, r.proc)
	}
	return err
}

// pushImage writes a random OCI image and pushes it to registry A with
// the edge certificate; all registries share the storage.
func (w *world) pushImage() error {
	var err error
	if w.image, err = newTestImage(filepath.Join(w.dir, "image")); err != nil {
		return err
	}
	edgeCerts, err := certsDir(w.dir, "certs-edge", w.registryCA.file, &w.edge)
	if err != nil {
		return err
	}
	digestFile := filepath.Join(w.dir, "pushed.digest")
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", edgeCerts,
		"--digestfile", digestFile, "oci:"+w.image.layout+":"+imageTag,
		"docker://"+hostOf(registryAAddr)+"/"+imageRepo+":"+imageTag))
	if r.err != nil {
		return fmt.Errorf("push: %s", r)
	}
	got, err := os.ReadFile(digestFile)
	if err != nil {
		return err
	}
	if string(got) != w.image.digest.String() {
		return fmt.Errorf("pushed digest %s, built %s: the registry changed the manifest", got, w.image.digest)
	}
	return nil
}

// startGateway makes the gateway's CA with `snigate ca init`, writes and
// checks its configuration, runs it and waits until every upstream is up.
func (w *world) startGateway() error {
	serveCA := filepath.Join(w.dir, "gateway-ca")
	if r := w.gw.snigate("ca", "init", "--out", serveCA, "--name", registryHost); r.err != nil {
		return fmt.Errorf("%s", r)
	}
	var err error
	if w.gatewayCerts, err = certsDir(w.dir, "certs-gateway", filepath.Join(serveCA, "ca.crt"), nil); err != nil {
		return err
	}
	if w.emptyCerts, err = certsDir(w.dir, "certs-empty", "", nil); err != nil {
		return err
	}
	spec := gatewaySpec{
		answer:      bastionAddr,
		registryUps: []string{registryAAddr, registryBAddr},
		mirrorUp:    mirrorAddr,
		tokenUp:     tokenRegAddr,
		serveCA:     serveCA,
		edge:        w.edge,
		registryCA:  w.registryCA.file,
		nodes:       w.nodes,
		auditLog:    filepath.Join(w.dir, "audit.log"),
		cacheDir:    filepath.Join(w.dir, "cache"),
	}
	w.spec = spec
	if err := w.gw.writeConfig(spec); err != nil {
		return err
	}
	err = w.gw.start()
	if w.gw.proc != nil {
		w.procs = append(w.procs, w.gw.proc)
	}
	if err != nil {
		return err
	}
	if err := w.gw.waitAllHealthy(); err != nil {
		return fmt.Errorf("upstreams never all healthy: %w\n%s", err, w.gw.proc.tail(30))
	}
	return nil
}

func (w *world) startContainerd() error {
	var err error
	if w.ctrd, err = newContainerd(filepath.Join(w.dir, "containerd")); err != nil {
		return err
	}
	for _, host := range []string{registryHost, httpHost, cacheHost} {
		if err := w.ctrd.trust(host, filepath.Join(w.gatewayCerts, "ca.crt")); err != nil {
			return err
		}
	}
	err = w.ctrd.start(w.node, w.logs)
	if w.ctrd.proc != nil {
		w.procs = append(w.procs, w.ctrd.proc)
	}
	return err
}

// certsDir makes a containers-style certificate directory (skopeo
// --src-cert-dir): ca.crt trusted, client.cert/client.key presented.
func certsDir(parent, name, caFile string, client *keyPair) (string, error) {
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	copies := map[string]string{}
	if caFile != "" {
		copies[caFile] = "ca.crt"
	}
	if client != nil {
		copies[client.certFile] = "client.cert"
		copies[client.keyFile] = "client.key"
	}
	for from, to := range copies {
		b, err := os.ReadFile(from)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o600); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// teardown stops every process (newest first) and removes the namespaces,
// then the directory unless a test failed or SNIGATE_E2E_KEEP=1. It
// returns what went wrong, including a gateway that did not exit 0 on
// SIGTERM (the contract: SIGTERM drains, then exits 0).
func (w *world) teardown(failed bool) error {
	var errs []error
	for i := len(w.procs) - 1; i >= 0; i-- {
		p := w.procs[i]
		err := p.stop()
		if w.gw != nil && p == w.gw.proc && err != nil {
			errs = append(errs, fmt.Errorf("snigate run did not exit 0 on SIGTERM: %w\n%s", err, p.tail(20)))
		}
	}
	for _, ns := range w.nsList {
		if err := ns.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.dir != "" {
		if failed || len(errs) > 0 || os.Getenv(keepEnv) == "1" {
			fmt.Fprintf(os.Stderr, "e2e: the world's files (logs in logs/) are kept in %s\n", w.dir)
		} else if err := os.RemoveAll(w.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logTails returns the end of every process's log: most of the gateway's,
// a little of the others' (the whole logs are in the kept directory).
func (w *world) logTails() string {
	var b strings.Builder
	for _, p := range w.procs {
		n := 10
		if w.gw != nil && p == w.gw.proc {
			n = 40
		}
		fmt.Fprintf(&b, "--- %s (%s, last %d lines)\n%s\n", p.name, p.logPath, n, clip(p.tail(n), 300))
	}
	return b.String()
}

// clip shortens each line of s to at most n bytes.
func clip(s string, n int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > n {
			lines[i] = l[:n] + " [...]"
		}
	}
	return strings.Join(lines, "\n")
}
