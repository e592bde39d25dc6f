package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
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

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/snigate/snigate/internal/testkit"
)

// cosignBin is where test/deps.sh installs cosign v3.1.3.
const cosignBin = "/opt/snigate-tools/bin/cosign"

// signWorld is a gateway whose route "registry" (registry.test) has
// verify (enforce) over a cache with offline: true, and "audit"
// (audit.test) the same in audit mode, in front of docker-registry
// behind mTLS, with images pushed and signed by cosign.
type signWorld struct {
	*world
	reg     *exec.Cmd
	regOut  *io.PipeWriter
	regStop context.CancelFunc
	regAddr string
	edge    *http.Transport // to the registry directly, with the edge identity
	keys    string          // the cosign key pairs' directory
	images  map[string]string
	blobs   map[string]string // a layer digest of each image
}

func needSignTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker-registry"); err != nil {
		t.Skip("docker-registry is not installed (test/deps.sh installs it)")
	}
	if _, err := os.Stat(cosignBin); err != nil {
		t.Skip("cosign is not installed in " + cosignBin + " (test/deps.sh builds it)")
	}
}

// startRegistry runs docker-registry on 127.0.0.1 with a certificate of
// w's CA, requiring client certificates of it.
func (s *signWorld) startRegistry(t *testing.T) {
	t.Helper()
	dir := filepath.Join(s.dir, "distribution")
	must(t, os.MkdirAll(dir, 0o755))
	_, err := s.ca.WriteLeaf(dir, "registry", "registry.test", "registry.test", "127.0.0.1")
	must(t, err)
	must(t, s.ca.WriteCA(dir, "ca"))
	cfg := fmt.Sprintf(`version: 0.1
log: {level: info, formatter: text}
storage: {filesystem: {rootdirectory: %[1]s/data}, delete: {enabled: true}}
http:
  addr: 127.0.0.1:0
  secret: verify-test
  tls: {certificate: %[1]s/registry.crt, key: %[1]s/registry.key, clientcas: [%[1]s/ca.crt]}
`, dir)
	must(t, os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o600))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "docker-registry", "serve", filepath.Join(dir, "config.yml"))
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	must(t, cmd.Start())
	s.reg, s.regOut, s.regStop = cmd, pw, cancel
	t.Cleanup(s.stopRegistry)
	addr := make(chan string, 1)
	go scanRegistryAddr(pr, addr)
	select {
	case s.regAddr = <-addr:
	case <-time.After(30 * time.Second): // a failure bound for a process start on a busy machine
		t.Fatal("docker-registry did not log its listening address")
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(s.dir, "edge.crt"), filepath.Join(s.dir, "edge.key"))
	must(t, err)
	s.edge = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool(), Certificates: []tls.Certificate{pair}}}
	t.Cleanup(s.edge.CloseIdleConnections)
}

func (s *signWorld) stopRegistry() {
	if s.reg != nil {
		s.regStop()
		_ = s.reg.Wait()
		_ = s.regOut.Close()
		s.reg = nil
	}
}

// scanRegistryAddr sends the address of docker-registry's "listening
// on" line, then drains its output.
func scanRegistryAddr(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), `msg="listening on `); ok {
			a, _, _ := strings.Cut(rest, `"`)
			a, _, _ = strings.Cut(a, ", tls")
			addr <- a
			break
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// push writes a random image (or, with index, an index of two) to
// repo:v1 and returns its digest and a layer's digest.
func (s *signWorld) push(t *testing.T, repo string, index bool) (string, string) {
	t.Helper()
	ref, err := name.ParseReference(s.regAddr + "/" + repo + ":v1")
	must(t, err)
	opt := remote.WithTransport(s.edge)
	if index {
		idx, err := random.Index(512, 1, 2)
		must(t, err)
		must(t, remote.WriteIndex(ref, idx, opt))
		d, err := idx.Digest()
		must(t, err)
		m, err := idx.IndexManifest()
		must(t, err)
		child, err := idx.Image(m.Manifests[0].Digest)
		must(t, err)
		return d.String(), layerOf(t, child)
	}
	img, err := random.Image(512, 2)
	must(t, err)
	must(t, remote.Write(ref, img, opt))
	d, err := img.Digest()
	must(t, err)
	return d.String(), layerOf(t, img)
}

func layerOf(t *testing.T, img v1.Image) string {
	t.Helper()
	ls, err := img.Layers()
	must(t, err)
	d, err := ls[0].Digest()
	must(t, err)
	return d.String()
}

// cosign runs cosign with the keys' password and no home of the user's.
func (s *signWorld) cosign(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(cosignBin, args...)
	cmd.Dir = s.keys
	cmd.Env = []string{"COSIGN_PASSWORD=test", "COSIGN_EXPERIMENTAL=1", "HOME=" + s.keys, "DOCKER_CONFIG=" + s.keys, "TUF_ROOT=" + filepath.Join(s.keys, "tuf"), "PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// sign signs repo@digest with key (a key pair's prefix in keys) and the
// extra flags (the signature's form).
func (s *signWorld) sign(t *testing.T, key, repo, digest string, form ...string) {
	t.Helper()
	args := append([]string{"sign", "--key", key + ".key", "--tlog-upload=false", "--use-signing-config=false", "--yes",
		"--registry-cacert", filepath.Join(s.dir, "ca.crt"), "--registry-client-cert", filepath.Join(s.dir, "edge.crt"),
		"--registry-client-key", filepath.Join(s.dir, "edge.key")}, form...)
	s.cosign(t, append(args, s.regAddr+"/"+repo+"@"+digest)...)
}

// registry sends a request to the registry directly.
func (s *signWorld) registry(t *testing.T, method, path, ctype string, body []byte) []byte {
	t.Helper()
	req, err := http.NewRequest(method, "https://"+s.regAddr+path, bytes.NewReader(body))
	must(t, err)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := s.edge.RoundTrip(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b
}

// tamper flips a byte of the signature in repo's signature tag of digest.
func (s *signWorld) tamper(t *testing.T, repo, digest string) {
	t.Helper()
	path := "/v2/" + repo + "/manifests/" + strings.Replace(digest, ":", "-", 1) + ".sig"
	var m map[string]any
	must(t, json.Unmarshal(s.registry(t, http.MethodGet, path, "", nil), &m))
	ann := m["layers"].([]any)[0].(map[string]any)["annotations"].(map[string]any)
	sig := []byte(ann["dev.cosignproject.cosign/signature"].(string))
	if sig[10] == 'A' {
		sig[10] = 'B'
	} else {
		sig[10] = 'A'
	}
	ann["dev.cosignproject.cosign/signature"] = string(sig)
	b, err := json.Marshal(m)
	must(t, err)
	s.registry(t, http.MethodPut, path, m["mediaType"].(string), b)
}

const signConfig = `listen:
  tls: ["127.0.0.1:0"]
  admin: "127.0.0.1:0"
routes:
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%[1]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt, server_name: registry.test}
    http:
      audit_log: audit.log
      cache: {dir: cache, offline: true}
      verify: {cosign: {keys: [keys/good.pub]}}
  - name: audit
    sni: ["audit.test"]
    mode: bridge
    upstreams: [%[1]q]
    health: {check: tcp, interval: 1h}
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt, server_name: registry.test}
    http:
      audit_log: audit.log
      verify: {mode: audit, cosign: {keys: [keys/good.pub]}}
`

func newSignWorld(t *testing.T) *signWorld {
	t.Helper()
	needSignTools(t)
	s := &signWorld{world: newWorld(t, ""), images: map[string]string{}, blobs: map[string]string{}}
	s.keys = filepath.Join(s.dir, "keys")
	must(t, os.MkdirAll(s.keys, 0o700))
	s.startRegistry(t)
	_, err := s.ca.WriteLeaf(s.dir, "serve", "registry.test", "registry.test", "audit.test")
	must(t, err)
	for _, k := range []string{"good", "other"} {
		s.cosign(t, "generate-key-pair", "--output-key-prefix", k)
	}
	for _, repo := range []string{"team/tagform", "team/bundle", "team/legacyref", "team/otherkey", "team/tampered", "team/unsigned", "team/fresh"} {
		s.images[repo], s.blobs[repo] = s.push(t, repo, false)
	}
	s.images["team/multi"], s.blobs["team/multi"] = s.push(t, "team/multi", true)
	legacy := []string{"--new-bundle-format=false"}
	s.sign(t, "good", "team/tagform", s.images["team/tagform"], legacy...)
	s.sign(t, "good", "team/bundle", s.images["team/bundle"]) // cosign v3's default: a sigstore bundle referrer
	s.sign(t, "good", "team/legacyref", s.images["team/legacyref"], "--new-bundle-format=false", "--registry-referrers-mode", "oci-1-1")
	s.sign(t, "other", "team/otherkey", s.images["team/otherkey"], legacy...)
	s.sign(t, "good", "team/tampered", s.images["team/tampered"], legacy...)
	s.tamper(t, "team/tampered", s.images["team/tampered"])
	s.sign(t, "good", "team/multi", s.images["team/multi"], legacy...)
	s.sign(t, "good", "team/fresh", s.images["team/fresh"], legacy...)
	s.writeConfig(fmt.Sprintf(signConfig, s.regAddr))
	s.start()
	return s
}

// node is a client of the gateway as a node is, for host.
func (s *signWorld) node(host string) *http.Transport {
	return &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
		return s.dialTLS(host, "h2", "http/1.1")
	}, ForceAttemptHTTP2: true}
}

// pull pulls host/repo by reference (a tag or a digest), every layer read.
func (s *signWorld) pull(t *testing.T, host, repo, ref string) error {
	t.Helper()
	sep := ":"
	if strings.HasPrefix(ref, "sha256:") {
		sep = "@"
	}
	r, err := name.ParseReference(host + "/" + repo + sep + ref)
	must(t, err)
	tr := s.node(host)
	defer tr.CloseIdleConnections()
	desc, err := remote.Get(r, remote.WithTransport(tr))
	if err != nil {
		return err
	}
	img, err := desc.Image() // an index: the linux/amd64 child, or the first
	if err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// get sends GET path to host through the gateway.
func (s *signWorld) get(t *testing.T, host, path string) (int, string) {
	t.Helper()
	tr := s.node(host)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("https://" + host + path)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

// TestVerifyWithCosign: images signed by cosign v3.1.3 in each form it
// writes pull through the gateway; unsigned, another key's and tampered
// signatures are refused with a DENIED naming the image and the reason,
// as is an unsigned image's layer by digest; an index's signature
// covers its platform manifests; audit mode serves and records; with the
// registry stopped, a verified image still pulls and an unverified one
// does not.
func TestVerifyWithCosign(t *testing.T) {
	s := newSignWorld(t)
	for _, repo := range []string{"team/tagform", "team/bundle", "team/legacyref", "team/multi"} {
		for _, ref := range []string{"v1", s.images[repo]} {
			if err := s.pull(t, "registry.test", repo, ref); err != nil {
				t.Errorf("signed %s:%s: %v", repo, ref, err)
			}
		}
	}
	refused := []struct{ repo, want string }{
		{"team/unsigned", "unsigned: no cosign signature"},
		{"team/otherkey", "invalid signature: no configured key verifies it"},
		{"team/tampered", "invalid signature: no configured key verifies it"},
	}
	for _, tc := range refused {
		err := s.pull(t, "registry.test", tc.repo, "v1")
		if err == nil || !strings.Contains(err.Error(), "DENIED") || !strings.Contains(err.Error(), tc.repo+"@"+s.images[tc.repo]) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want DENIED naming %s@%s and %q", tc.repo, err, tc.repo, s.images[tc.repo], tc.want)
		}
	}
	if code, body := s.get(t, "registry.test", "/v2/team/unsigned/blobs/"+s.blobs["team/unsigned"]); code != http.StatusForbidden ||
		!strings.Contains(body, "no verified manifest of team/unsigned references this blob") {
		t.Errorf("an unsigned image's layer by digest: %d %.200q", code, body)
	}
	if err := s.pull(t, "audit.test", "team/unsigned", "v1"); err != nil {
		t.Errorf("audit mode: %v", err)
	}
	testkit.Poll(t, "the audit records", func() bool {
		b, _ := os.ReadFile(filepath.Join(s.dir, "audit.log"))
		return bytes.Contains(b, []byte(`"route":"audit"`)) && bytes.Contains(b, []byte(`"repository":"team/unsigned","kind":"manifest","reference":"v1"`)) &&
			bytes.Contains(b, []byte(`"signature":"unsigned"`)) && bytes.Contains(b, []byte(`"signature":"verified"`)) &&
			bytes.Contains(b, []byte(`"signature":"invalid"`))
	})

	s.stopRegistry()
	if err := s.pull(t, "registry.test", "team/tagform", s.images["team/tagform"]); err != nil {
		t.Errorf("offline, a verified image: %v", err)
	}
	if err := s.pull(t, "registry.test", "team/bundle", s.images["team/bundle"]); err != nil {
		t.Errorf("offline, a verified bundle-signed image: %v", err)
	}
	for _, repo := range []string{"team/fresh", "team/unsigned"} {
		if code, body := s.get(t, "registry.test", "/v2/"+repo+"/manifests/"+s.images[repo]); code == http.StatusOK {
			t.Errorf("offline, %s never verified: %d %s", repo, code, body)
		}
	}

	// A restart while the registry is away: the decisions come back from
	// the cache directory.
	s.world.stop()
	s.start()
	if err := s.pull(t, "registry.test", "team/tagform", s.images["team/tagform"]); err != nil {
		t.Errorf("offline after a restart, a verified image: %v", err)
	}
	if code, body := s.get(t, "registry.test", "/v2/team/fresh/manifests/"+s.images["team/fresh"]); code == http.StatusOK {
		t.Errorf("offline after a restart, an image never verified: %d %s", code, body)
	}
}
