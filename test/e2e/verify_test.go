package e2e

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The routes with a signature policy (http.verify), added by a reload to
// the world's routes: "verify" enforces (over a cache with offline:
// true), "verifyaudit" audits, both with the cosign key "good".
const (
	verifyHost      = "verify.registry.example.test"
	verifyAuditHost = "verifyaudit.registry.example.test"
	verifyAuthHost  = "verifyauth.registry.example.test" // http.auth + verify, to the htpasswd registry
	// e2eCosign is where test/deps.sh installs cosign v3.1.3.
	e2eCosign = "/opt/snigate-tools/bin/cosign"
)

// signedImage is an image pushed for the signature tests.
type signedImage struct {
	repo, digest, layer string
}

// verifyFixture holds the cosign keys and the images, pushed and signed
// once for every verify test.
type verifyFixture struct {
	keys   string // the cosign key pairs: good.pub/key, other.pub/key
	images map[string]signedImage
	audit  string // the verify routes' audit log
	cache  string // route verify's cache.dir
}

var (
	verifyOnce sync.Once
	verifySet  *verifyFixture
	verifyErr  error
)

// getVerify pushes and signs the images (once) and reloads the gateway
// with the verify routes, restored to the world's own routes at the end.
func (w *world) getVerify(t *testing.T, extra string) *verifyFixture {
	t.Helper()
	if _, err := os.Stat(e2eCosign); err != nil {
		t.Skip("cosign is not installed in " + e2eCosign + " (test/deps.sh builds it)")
	}
	verifyOnce.Do(func() { verifySet, verifyErr = w.signImages(t) })
	if verifyErr != nil {
		t.Fatalf("signed images: %v", verifyErr)
	}
	for _, h := range []string{verifyHost, verifyAuditHost, verifyAuthHost} {
		if err := w.ctrd.trust(h, filepath.Join(w.gatewayCerts, "ca.crt")); err != nil {
			t.Fatal(err)
		}
	}
	spec := w.spec
	spec.extra = w.verifyRoutes(verifySet) + extra
	w.reloadGateway(t, spec)
	t.Cleanup(func() { w.reloadGateway(t, w.spec) })
	return verifySet
}

// signImages makes the keys and pushes the images: tag-form signature,
// OCI 1.1 referrer (--registry-referrers-mode oci-1-1; docker-registry has
// no referrers API, so cosign writes the referrers tag schema), cosign
// v3's default sigstore bundle, unsigned, signed by another key,
// tampered, an index signed as a whole, and one for audit mode.
func (w *world) signImages(t *testing.T) (*verifyFixture, error) {
	f := &verifyFixture{keys: filepath.Join(w.dir, "cosign-keys"), images: map[string]signedImage{},
		audit: filepath.Join(w.dir, "verify-audit.log"), cache: filepath.Join(w.dir, "verify-cache")}
	if err := os.MkdirAll(f.keys, 0o700); err != nil {
		return nil, err
	}
	for _, k := range []string{"good", "other"} {
		cmd := exec.Command(e2eCosign, "generate-key-pair", "--output-key-prefix", k)
		cmd.Dir = f.keys
		if r := runCmd(cmd, f.cosignEnv()...); r.err != nil {
			return nil, fmt.Errorf("cosign generate-key-pair: %s", r)
		}
	}
	legacy := []string{"--new-bundle-format=false"}
	signs := []struct {
		repo, key string
		form      []string
	}{
		{"e2e/vsigned", "good", legacy},
		{"e2e/vreferrer", "good", []string{"--new-bundle-format=false", "--registry-referrers-mode", "oci-1-1"}},
		{"e2e/vbundle", "good", nil},
		{"e2e/vunsigned", "", nil},
		{"e2e/votherkey", "other", legacy},
		{"e2e/vtampered", "good", legacy},
		{"e2e/vaudit", "", nil},
	}
	for _, s := range signs {
		img, err := w.pushVerifyImage(t, s.repo)
		if err != nil {
			return nil, err
		}
		f.images[s.repo] = img
		if s.key != "" {
			if err := w.cosignSign(f, s.key, img, s.form...); err != nil {
				return nil, err
			}
		}
	}
	if err := w.tamperSignature(t, f.images["e2e/vtampered"]); err != nil {
		return nil, err
	}
	idx, err := w.pushVerifyIndex(t, "e2e/vmulti")
	if err != nil {
		return nil, err
	}
	f.images["e2e/vmulti"] = idx
	return f, w.cosignSign(f, "good", idx, legacy...)
}

func (f *verifyFixture) cosignEnv() []string {
	return []string{"COSIGN_PASSWORD=e2e", "COSIGN_EXPERIMENTAL=1", "HOME=" + f.keys, "DOCKER_CONFIG=" + f.keys, "TUF_ROOT=" + filepath.Join(f.keys, "tuf")}
}

// cosignSign signs img with key, from the registry namespace with the
// edge identity (the registry demands it), in the form the flags say.
func (w *world) cosignSign(f *verifyFixture, key string, img signedImage, form ...string) error {
	args := append([]string{e2eCosign, "sign", "--key", filepath.Join(f.keys, key+".key"), "--tlog-upload=false",
		"--use-signing-config=false", "--yes", "--registry-cacert", w.registryCA.file,
		"--registry-client-cert", w.edge.certFile, "--registry-client-key", w.edge.keyFile}, form...)
	args = append(args, registryAAddr+"/"+img.repo+"@"+img.digest)
	if r := runCmd(w.registry.command(args...), f.cosignEnv()...); r.err != nil {
		return fmt.Errorf("cosign sign %s: %s", img.repo, r)
	}
	return nil
}

// pushVerifyImage pushes a one-layer image as repo:1.
func (w *world) pushVerifyImage(t *testing.T, repo string) (signedImage, error) {
	l, err := random.Layer(2048, types.OCILayer)
	if err != nil {
		return signedImage{}, err
	}
	img, err := oneLayerImage(l)
	if err != nil {
		return signedImage{}, err
	}
	dir := filepath.Join(t.TempDir(), "verify-image")
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: "1"}))
	}
	if err != nil {
		return signedImage{}, err
	}
	d, err := w.pushLayout(dir, repo, false)
	if err != nil {
		return signedImage{}, err
	}
	ld, _ := l.Digest()
	return signedImage{repo: repo, digest: d, layer: ld.String()}, nil
}

// pushVerifyIndex pushes an index of two platforms (this machine's and
// another) as repo:1; layer is the layer of this machine's image.
func (w *world) pushVerifyIndex(t *testing.T, repo string) (signedImage, error) {
	var adds []mutate.IndexAddendum
	var layer string
	for _, arch := range []string{runtime.GOARCH, "s390x"} {
		l, err := random.Layer(2048, types.OCILayer)
		if err != nil {
			return signedImage{}, err
		}
		img, err := oneLayerImage(l)
		if err != nil {
			return signedImage{}, err
		}
		if layer == "" {
			ld, _ := l.Digest()
			layer = ld.String()
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	dir := filepath.Join(t.TempDir(), "verify-index")
	p, err := layout.Write(dir, empty.Index)
	if err == nil {
		err = p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: "1"}))
	}
	if err != nil {
		return signedImage{}, err
	}
	d, err := w.pushLayout(dir, repo, true)
	if err != nil {
		return signedImage{}, err
	}
	return signedImage{repo: repo, digest: d, layer: layer}, nil
}

// pushLayout copies the layout's image (all: its whole index) to
// registry A as repo:1 and returns the digest the registry holds.
func (w *world) pushLayout(dir, repo string, all bool) (string, error) {
	digestFile := filepath.Join(dir, "pushed.digest")
	args := []string{"copy", "--digestfile", digestFile, "--dest-cert-dir", filepath.Join(w.dir, "certs-edge")}
	if all {
		args = append(args, "--all")
	}
	args = append(args, "oci:"+dir+":1", "docker://"+registryAAddr+"/"+repo+":1")
	if r := runCmd(w.registry.command(append([]string{"skopeo", "--insecure-policy"}, args...)...)); r.err != nil {
		return "", fmt.Errorf("push %s: %s", repo, r)
	}
	d, err := os.ReadFile(digestFile)
	return strings.TrimSpace(string(d)), err
}

// tamperSignature flips a character of the signature in img's signature
// tag, straight on the registry.
func (w *world) tamperSignature(t *testing.T, img signedImage) error {
	path := "/v2/" + img.repo + "/manifests/" + strings.Replace(img.digest, ":", "-", 1) + ".sig"
	status, body := w.registryManifest(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, status, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	ann := m["layers"].([]any)[0].(map[string]any)["annotations"].(map[string]any)
	sig := []byte(ann["dev.cosignproject.cosign/signature"].(string))
	sig[10] = map[bool]byte{true: 'B', false: 'A'}[sig[10] == 'A']
	ann["dev.cosignproject.cosign/signature"] = string(sig)
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if status, body := w.registryManifest(t, http.MethodPut, path, b); status != http.StatusCreated {
		return fmt.Errorf("PUT %s: %d %s", path, status, body)
	}
	return nil
}

// registryManifest GETs or PUTs an OCI manifest on registry A directly.
func (w *world) registryManifest(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	conn, err := tlsDialIn(w.bastion, registryAAddr, w.edgeTLS(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctype := ""
	if body != nil {
		ctype = "application/vnd.oci.image.manifest.v1+json"
	}
	status, _, b, err := exchangeOn(conn, method, "https://"+registryHost+path, ctype, body,
		map[string]string{"Accept": "application/vnd.oci.image.manifest.v1+json"})
	if err != nil {
		t.Fatalf("%s %s on the registry: %v", method, path, err)
	}
	return status, b
}

// verifyRoutes is the YAML of routes verify and verifyaudit.
func (w *world) verifyRoutes(f *verifyFixture) string {
	var b strings.Builder
	tail := fmt.Sprintf("      server_name: %q\n    http:\n      audit_log: %s\n", registryHost, f.audit)
	key := filepath.Join(f.keys, "good.pub")
	w.spec.bridgeRoute(&b, "verify", verifyHost, "", tail+fmt.Sprintf(`      cache:
        dir: %s
        offline: true
        tags: 24h
      verify:
        cosign: {keys: [%s]}
`, f.cache, key))
	w.spec.bridgeRoute(&b, "verifyaudit", verifyAuditHost, "", tail+fmt.Sprintf(`      verify:
        mode: audit
        cosign: {keys: [%s]}
`, key))
	return b.String()
}

// pullVerify pulls host/repo:1 with skopeo from the node (the platform
// of this machine from an index).
func (w *world) pullVerify(t *testing.T, host, repo string) result {
	t.Helper()
	return runCmd(skopeo(w.node, "copy", "--src-cert-dir", w.gatewayCerts, "docker://"+host+"/"+repo+":1",
		"oci:"+filepath.Join(t.TempDir(), "img")+":1"))
}

// verifyRecord is an audit record with its signature field.
type verifyRecord struct {
	auditRecord
	Signature string `json:"signature"`
}

// waitVerifyAudit waits for a record of the verify routes' audit log
// that match accepts.
func waitVerifyAudit(t *testing.T, file string, match func(verifyRecord) bool) verifyRecord {
	t.Helper()
	return waitRecord(t, file, match)
}

// refusedWith checks that a client's failed pull shows the gateway's
// refusal: the image's name and the reason.
func refusedWith(t *testing.T, r result, img signedImage, reason string) {
	t.Helper()
	if r.err == nil {
		t.Fatalf("the pull of %s succeeded:\n%s", img.repo, r)
	}
	for _, want := range []string{"refused by the signature policy", img.repo + "@" + img.digest, reason} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("the client's error does not say %q:\n%s", want, r)
		}
	}
}

// edgeTLS is the gateway's edge identity toward the registries.
func (w *world) edgeTLS(t *testing.T) *tls.Config {
	t.Helper()
	pool, err := certPool(w.registryCA.file)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(w.edge.certFile, w.edge.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{ServerName: registryHost, RootCAs: pool, Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
}
