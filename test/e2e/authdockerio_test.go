package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testkit/distribution"
)

// Docker Hub's names as node-config writes them: images are named
// docker.io/..., containerd reads certs.d/docker.io/hosts.toml, whose
// server is registry-1.docker.io, the route's sni. Behind it, in the
// test, is jwtreg (auth: token, blobs redirected to the storage host).
const (
	hubHost          = "registry-1.docker.io"
	hubRotatedRepo   = "e2e/rotated" // pulled after the password file was rotated
	hubRefusedRepo   = "e2e/refused" // asked with a password the token service refuses
	rotatedPassword  = "e2e-R0tated-Passw0rd"
	refusedPassword  = "e2e-not-the-password"
	hubRouteName     = "dockerhub"
	hubNodeWrongAuth = "Basic bm9kZTp3cm9uZw==" // node:wrong, the node's own credentials
)

// hubRoute is the YAML of the docker.io route: registry-1.docker.io with
// http.auth, upstream jwtreg, its own serving CA (ca init for Docker
// Hub's names), jwtreg verified by its own name, redirects followed.
func (w *world) hubRoute(caDir, pwFile, auditLog string) string {
	return fmt.Sprintf(`  - name: %s
    sni: [%q]
    mode: bridge
    upstreams: [%q]
    health: {check: tcp}
    serve: {ca_cert: %s, ca_key: %s}
    upstream_tls: {ca: %s, server_name: %q}
    http:
      repositories: [%q]
      audit_log: %s
      redirects: follow
      auth: {username: %s, password_file: %s}
`, hubRouteName, hubHost, jwtRegAddr, filepath.Join(caDir, "ca.crt"), filepath.Join(caDir, "ca.key"),
		w.registryCA.file, tokenAuthHost, httpAllowed, auditLog, authUser, pwFile)
}

// TestAuthDockerIOReferencesThroughNodeConfig: a node with no
// credentials and no route to the registry, its token service or its
// blob storage pulls docker.io/e2e/app:1 with ctr, the CRI (crictl) and
// skopeo through node-config's files, from a registry with auth: token
// whose blob reads redirect to a storage host. Every digest is right;
// the registry's log shows the gateway's identity and the node's
// address; the storage host saw neither an Authorization nor a client
// certificate; one token per scope for every pull; the node's own wrong
// Authorization makes no difference; a repository outside repositories
// is 403 with no token asked; a rotated password file is used for the
// next token; refused credentials give the contract's 401.
func TestAuthDockerIOReferencesThroughNodeConfig(t *testing.T) {
	w := getWorld(t)
	ar := w.startAuthRegistries(t)
	w.pushAs(t, hubRotatedRepo)
	pwFile := filepath.Join(w.dir, "hub.password")
	writePassword(t, pwFile, authPassword)
	caDir := filepath.Join(w.dir, "hub-ca")
	if r := w.gw.snigate("ca", "init", "--out", caDir, "--name", hubHost, "--name", "docker.io"); r.err != nil {
		t.Fatalf("ca init:\n%s", r)
	}
	spec := w.spec
	auditLog := filepath.Join(w.dir, "hub-audit.log")
	spec.extra = w.hubRoute(caDir, pwFile, auditLog)
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	nodeFiles := t.TempDir()
	w.nodeConfig(t, nodeFiles)
	certsD := filepath.Join(nodeFiles, "certs.d")
	scope := "repository:" + imageRepo + ":pull"
	before, s0 := ar.ts.Requests(scope), len(ar.ts.Subjects())

	ref := "docker.io/" + imageRepo + ":" + imageTag
	w.ctrPullHub(t, certsD, ref)
	w.criPullHub(t, certsD, ref)
	w.mustPullSkopeo(t, hubHost, filepath.Join(nodeFiles, "certs.d", "docker.io"))
	if status, body := w.hubGet(t, "/v2/"+imageRepo+"/manifests/"+imageTag, hubNodeWrongAuth); status != http.StatusOK {
		t.Errorf("GET with the node's own wrong Authorization: %d %s, want 200: it is dropped", status, body)
	}
	if n := ar.ts.Requests(scope) - before; n != 1 {
		t.Errorf("the token service was asked %d times for %s in three pulls and a GET, want 1", n, scope)
	}
	checkStorageHost(t, w, ar.storage)
	checkHubIdentity(t, ar, s0)
	t.Run("outside repositories: 403 before any token", func(t *testing.T) {
		n0 := ar.ts.Total()
		if status, body := w.hubGet(t, "/v2/other/app/manifests/"+imageTag, ""); status != http.StatusForbidden {
			t.Errorf("GET outside http.repositories: %d %s, want 403", status, body)
		}
		if n := ar.ts.Total() - n0; n != 0 {
			t.Errorf("the token service was asked %d times for a refused repository, want 0", n)
		}
	})
	t.Run("a rotated password file is used for the next token", func(t *testing.T) {
		w.rotateHubPassword(t, ar.ts, pwFile, certsD)
	})
	t.Run("refused credentials: 401 UNAUTHORIZED", func(t *testing.T) {
		writePassword(t, pwFile, refusedPassword)
		status, body := w.hubGet(t, "/v2/"+hubRefusedRepo+"/manifests/"+imageTag, "")
		if status != http.StatusUnauthorized || !strings.Contains(body, `"UNAUTHORIZED"`) || !strings.Contains(body, "gateway's credentials were refused") {
			t.Errorf("GET with refused credentials: %d %s, want 401 UNAUTHORIZED saying the gateway's credentials were refused", status, body)
		}
	})
}

// checkHubIdentity: jwtreg authorized the node's pull with a JWT the
// token service signed for the gateway's user only (docker-registry 2.8
// does not log a token's subject), and logs the node's address; every
// token since the s0th was asked for the gateway's user.
func checkHubIdentity(t *testing.T, ar authRegistries, s0 int) {
	t.Helper()
	jwtreg := ar.regs[1]
	line := waitAuthorizedLog(t, jwtreg, "/v2/"+imageRepo+"/manifests/"+imageTag)
	if !strings.Contains(line, "remoteaddr="+nodeAddr) {
		t.Errorf("jwtreg authorized the pull without the node's address %s:\n%s", nodeAddr, line)
	}
	for _, s := range ar.ts.Subjects()[s0:] {
		if s != authUser {
			t.Errorf("a token of the pulls was asked for %q, want the gateway's %q", s, authUser)
		}
	}
}

// rotateHubPassword changes the password at the token service and in
// the password file (a rename, as a Secret's update is), then pulls a
// repository whose scope has no token yet: the token is asked with the
// new password (a password grant, not the refresh token had with the
// old one), the pull succeeds, and the old password is refused.
func (w *world) rotateHubPassword(t *testing.T, ts *distribution.TokenService, pwFile, certsD string) {
	t.Helper()
	ts.SetUser(authUser, rotatedPassword)
	writePassword(t, pwFile, rotatedPassword)
	g0 := len(ts.Grants())
	w.ctrPullHub(t, certsD, "docker.io/"+hubRotatedRepo+":"+imageTag)
	grants, subjects := ts.Grants()[g0:], ts.Subjects()[g0:]
	if len(grants) == 0 || grants[0] != "password" || subjects[0] != authUser {
		t.Errorf("after the rotation the gateway asked with %q for %q, want a password grant of %s", grants, subjects, authUser)
	}
	if status := w.tokenServiceGet(t, authPassword); status != http.StatusUnauthorized {
		t.Errorf("the old password at the token service: %d, want 401", status)
	}
	if status := w.tokenServiceGet(t, rotatedPassword); status != http.StatusOK {
		t.Errorf("the new password at the token service: %d, want 200", status)
	}
}

// ctrPullHub pulls ref with ctr and node-config's certs.d as it is, and
// checks the digest.
func (w *world) ctrPullHub(t *testing.T, certsD, ref string) {
	t.Helper()
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", certsD, ref))
	if r.err != nil {
		t.Fatalf("ctr pull %s:\n%s", ref, r)
	}
	if got, err := w.ctrd.imageDigest(w.node, ref); err != nil || got != w.image.digest.String() {
		t.Fatalf("ctr pulled %s at %s (%v), pushed %s", ref, got, err, w.image.digest)
	}
}

// criPullHub pulls ref through containerd's CRI image service (crictl),
// whose registry.config_path gets node-config's docker.io and
// registry-1.docker.io directories, and checks the digest in the CRI's
// namespace (k8s.io).
func (w *world) criPullHub(t *testing.T, certsD, ref string) {
	t.Helper()
	if _, err := exec.LookPath("crictl"); err != nil {
		t.Skip("no crictl")
	}
	for _, host := range []string{"docker.io", hubHost} {
		dest := filepath.Join(w.ctrd.hostsDir, host)
		if err := os.CopyFS(dest, os.DirFS(filepath.Join(certsD, host))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dest) })
	}
	crictl := func(args ...string) result {
		return runCmd(w.node.command(append([]string{"crictl", "--runtime-endpoint", "unix://" + w.ctrd.socket,
			"--image-endpoint", "unix://" + w.ctrd.socket, "--timeout", "60s"}, args...)...))
	}
	crictl("rmi", ref)
	t.Cleanup(func() { crictl("rmi", ref) })
	if r := crictl("pull", ref); r.err != nil {
		t.Fatalf("CRI pull %s:\n%s", ref, r)
	}
	r := runCmd(w.ctrd.ctr(w.node, "-n", "k8s.io", "images", "ls"))
	want := ref + " application/vnd.oci.image.manifest.v1+json " + w.image.digest.String()
	if r.err != nil || !strings.Contains(strings.Join(strings.Fields(r.out), " "), want) {
		t.Fatalf("the CRI's images lack %s at %s:\n%s", ref, w.image.digest, r)
	}
}

// checkStorageHost: blob reads went to the storage host (the registry
// redirected them and the gateway followed), never with an
// Authorization header or a client certificate; and the node has no
// route to it.
func checkStorageHost(t *testing.T, w *world, s *distribution.StorageHost) {
	t.Helper()
	reqs := s.Requests()
	served := 0
	for _, r := range reqs {
		if r.Authorization || r.ClientCert {
			t.Errorf("the storage host got %s %s with Authorization %v, client certificate %v; want neither", r.Method, r.Path, r.Authorization, r.ClientCert)
		}
		if r.Status == http.StatusOK {
			served++
		}
	}
	if served == 0 {
		t.Errorf("the storage host served nothing (%d requests): the registry's redirect was not followed", len(reqs))
	}
	err := w.node.do(func() error {
		c, err := net.DialTimeout("tcp", storageAddr, 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	if err == nil {
		t.Errorf("the node reaches the storage host %s: the test proves nothing", storageAddr)
	}
}

// hubGet sends GET path to the docker.io route from the node, with the
// node's Authorization auth when not empty.
func (w *world) hubGet(t *testing.T, path, auth string) (int, string) {
	t.Helper()
	pool, err := certPool(filepath.Join(w.dir, "hub-ca", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tlsDialIn(w.node, bastionAddr+":443", &tls.Config{ServerName: hubHost, RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := http.NewRequest(http.MethodGet, "https://"+hubHost+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	status, body, err := sendOn(conn, req)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}

// tokenServiceGet asks the token service for a token with authUser's
// Basic credentials, from the registry namespace (only it reaches the
// service), and returns the status.
func (w *world) tokenServiceGet(t *testing.T, password string) int {
	t.Helper()
	var conn net.Conn
	err := w.registry.do(func() (err error) {
		conn, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", tokenSvcAddr,
			&tls.Config{InsecureSkipVerify: true}) // the test's own service; only its answer matters
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := http.NewRequest(http.MethodGet, "https://"+hostOf(tokenSvcAddr)+"/token?service="+e2eTokenService+"&scope=repository:"+imageRepo+":pull", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(authUser, password)
	status, _, err := sendOn(conn, req)
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// sendOn sends req on conn (HTTP/1.1, connection closed after) and reads
// the whole answer.
func sendOn(conn net.Conn, req *http.Request) (int, string, error) {
	if err := conn.SetDeadline(time.Now().Add(20 * time.Second)); err != nil {
		return 0, "", err
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		return 0, "", fmt.Errorf("write request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, "", fmt.Errorf("read response: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// pushAs pushes the world's image to repo on registry A (the storage is
// shared) with the edge certificate.
func (w *world) pushAs(t *testing.T, repo string) {
	t.Helper()
	edgeCerts := filepath.Join(w.dir, "certs-edge")
	r := runCmd(w.registry.command("skopeo", "--insecure-policy", "copy", "--dest-cert-dir", edgeCerts,
		"oci:"+w.image.layout+":"+imageTag, "docker://"+hostOf(registryAAddr)+"/"+repo+":"+imageTag))
	if r.err != nil {
		t.Fatalf("push %s:\n%s", repo, r)
	}
}

// writePassword replaces the password file whole (write, then rename),
// as a Kubernetes Secret's update does.
func writePassword(t *testing.T, path, password string) {
	t.Helper()
	if err := writeFileAtomic(path, []byte(password+"\n")); err != nil {
		t.Fatal(err)
	}
}
