package e2e

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/snigate/snigate/internal/pki"
)

// nodeHost is the bridge route that requires node certificates: the same
// registries as registryHost, serve.client_ca the node CA, client_names
// system:node:*, client_crl written by openssl ca.
const nodeHost = "nodes." + registryHost

// nodeIdentity is the node PKI of the world: a node CA made by `snigate ca
// init`, kubelet-style node certificates made by `snigate ca issue-node`,
// and an openssl ca directory that revokes them into the route's CRL.
type nodeIdentity struct {
	caDir string // ca.crt, ca.key
	crl   string // serve.client_crl
	ossl  string // openssl.cnf, index.txt, crlnumber
	// worker1 pulls; worker2 is revoked by TestNodeIdentityRevocation.
	worker1, worker2 keyPair
	worker1PEM       string  // worker1's certificate and key in one file, as the kubelet writes them
	otherCA          keyPair // system:node:worker-1 from a CA that is not client_ca
	kubeProxy        keyPair // the node CA's, but system:kube-proxy: outside client_names
}

// makeNodeIdentity builds the node PKI with the snigate binary and openssl.
func (w *world) makeNodeIdentity() error {
	dir := filepath.Join(w.dir, "nodes")
	n := &nodeIdentity{caDir: filepath.Join(dir, "ca"), crl: filepath.Join(dir, "nodes.crl"), ossl: filepath.Join(dir, "openssl")}
	w.nodes = n
	if r := w.gw.snigate("ca", "init", "--out", n.caDir); r.err != nil {
		return fmt.Errorf("%s", r)
	}
	for name, kp := range map[string]*keyPair{"worker-1": &n.worker1, "worker-2": &n.worker2} {
		if r := w.gw.snigate("ca", "issue-node", name, "--ca", n.caDir, "--out", dir); r.err != nil {
			return fmt.Errorf("%s", r)
		}
		*kp = keyPair{certFile: filepath.Join(dir, name+".crt"), keyFile: filepath.Join(dir, name+".key")}
	}
	var err error
	if n.worker1PEM, err = combinedPEM(n.worker1, filepath.Join(dir, "kubelet-client-current.pem")); err != nil {
		return err
	}
	if err := n.makeOutsiders(dir); err != nil {
		return err
	}
	if err := n.initOpenSSL(); err != nil {
		return err
	}
	return n.writeCRL()
}

// makeOutsiders issues the certificates the route must refuse although
// they look like node certificates.
func (n *nodeIdentity) makeOutsiders(dir string) error {
	other, err := newCA(dir, "other-cluster")
	if err != nil {
		return err
	}
	if n.otherCA, err = issueClient(other.Authority, dir, "other-worker-1", "system:node:worker-1"); err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(n.caDir, "ca.crt"), filepath.Join(n.caDir, "ca.key"))
	if err != nil {
		return err
	}
	nodeCA := &pki.Authority{Cert: pair.Leaf, Key: pair.PrivateKey.(*ecdsa.PrivateKey)}
	n.kubeProxy, err = issueClient(nodeCA, dir, "kube-proxy", "system:kube-proxy")
	return err
}

// issueClient writes name.crt/key: a client certificate of a with CN cn.
func issueClient(a *pki.Authority, dir, name, cn string) (keyPair, error) {
	l, err := a.Issue(pki.CommonName(cn), pki.Organization("system:nodes"), pki.ExtKeyUsage(x509.ExtKeyUsageClientAuth))
	if err != nil {
		return keyPair{}, err
	}
	certFile, keyFile, err := l.Write(dir, name)
	return keyPair{certFile: certFile, keyFile: keyFile}, err
}

func combinedPEM(kp keyPair, file string) (string, error) {
	cert, err := os.ReadFile(kp.certFile)
	if err != nil {
		return "", err
	}
	key, err := os.ReadFile(kp.keyFile)
	if err != nil {
		return "", err
	}
	return file, os.WriteFile(file, append(cert, key...), 0o600)
}

// initOpenSSL makes the minimal openssl ca directory that revokes and
// writes CRLs with the node CA's key.
func (n *nodeIdentity) initOpenSSL() error {
	if err := os.MkdirAll(n.ossl, 0o700); err != nil {
		return err
	}
	cnf := fmt.Sprintf(`[ ca ]
default_ca = nodes

[ nodes ]
database = %s
crlnumber = %s
certificate = %s
private_key = %s
default_md = sha256
default_crl_days = 1
`, filepath.Join(n.ossl, "index.txt"), filepath.Join(n.ossl, "crlnumber"),
		filepath.Join(n.caDir, "ca.crt"), filepath.Join(n.caDir, "ca.key"))
	return pki.WriteFiles(n.ossl, map[string][]byte{"openssl.cnf": []byte(cnf), "index.txt": nil, "crlnumber": []byte("01\n")})
}

// openssl runs `openssl ca -config openssl.cnf args...`.
func (n *nodeIdentity) openssl(args ...string) result {
	return runCmd(exec.Command("openssl", append([]string{"ca", "-config", filepath.Join(n.ossl, "openssl.cnf")}, args...)...))
}

// writeCRL writes a fresh CRL of every revocation so far over client_crl,
// by rename, as a careful operator (or a Secret update) does.
func (n *nodeIdentity) writeCRL() error {
	tmp := n.crl + ".new"
	if r := n.openssl("-gencrl", "-out", tmp); r.err != nil {
		return fmt.Errorf("%s", r)
	}
	return os.Rename(tmp, n.crl)
}

// revoke revokes kp's certificate and writes the new CRL.
func (n *nodeIdentity) revoke(kp keyPair) error {
	if r := n.openssl("-revoke", kp.certFile); r.err != nil {
		return fmt.Errorf("%s", r)
	}
	return n.writeCRL()
}

// hostsTOMLWithClient is containerd's hosts.toml for host trusting caFile
// and presenting the kubelet-style combined PEM clientPEM.
func hostsTOMLWithClient(host, caFile, clientPEM string) string {
	return hostsTOML(host, caFile) + fmt.Sprintf("  client = %q\n", clientPEM)
}
