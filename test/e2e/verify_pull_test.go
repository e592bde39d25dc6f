package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifySignaturePolicy is issue 32 end to end: images signed by
// cosign v3.1.3 on the test registry, pulled by the node through a route
// with http.verify, by skopeo, ctr and a CRI pull (crictl).
func TestVerifySignaturePolicy(t *testing.T) {
	w := getWorld(t)
	f := w.getVerify(t, "")
	t.Run("signed images pull with skopeo", func(t *testing.T) { verifySignedSkopeo(t, w, f) })
	t.Run("a signed image pulls with ctr", func(t *testing.T) { verifySignedCtr(t, w, f) })
	t.Run("a signed image pulls by CRI, an unsigned one is refused", func(t *testing.T) { verifyCRI(t, w, f) })
	t.Run("unsigned, another key, tampered: refused with the reason", func(t *testing.T) { verifyRefusedWithReason(t, w, f) })
	t.Run("an unsigned image's layer by digest is refused", func(t *testing.T) { verifyUnsignedLayer(t, w, f) })
	t.Run("an index signed as a whole pulls its platform manifest", func(t *testing.T) { verifySignedIndex(t, w, f) })
	t.Run("mode audit serves and records", func(t *testing.T) { verifyAuditMode(t, w, f) })
	t.Run("offline: a verified image pulls, an unverified one does not", func(t *testing.T) { verifyOffline(t, w, f) })
}

// verifySignedSkopeo: the images signed each way pull with skopeo, the
// referrer-signed one audited as verified.
func verifySignedSkopeo(t *testing.T, w *world, f *verifyFixture) {
	for _, repo := range []string{"e2e/vsigned", "e2e/vreferrer", "e2e/vbundle"} {
		if r := w.pullVerify(t, verifyHost, repo); r.err != nil {
			t.Errorf("pull of %s (signed):\n%s", repo, r)
		}
	}
	rec := waitVerifyAudit(t, f.audit, func(r verifyRecord) bool {
		return r.Route == "verify" && r.Repository == "e2e/vreferrer" && r.Kind == "manifest" && r.Status == http.StatusOK
	})
	if rec.Signature != "verified" {
		t.Errorf("audit of the referrer-signed pull: signature %q, want verified", rec.Signature)
	}
}

// verifySignedCtr: a signed image pulls with ctr, with its digest.
func verifySignedCtr(t *testing.T, w *world, f *verifyFixture) {
	ref := verifyHost + "/e2e/vsigned:1"
	runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	defer runCmd(w.ctrd.ctr(w.node, "images", "rm", "--sync", ref))
	if r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref)); r.err != nil {
		t.Fatalf("ctr pull of a signed image:\n%s", r)
	}
	if got, err := w.ctrd.imageDigest(w.node, ref); err != nil || got != f.images["e2e/vsigned"].digest {
		t.Fatalf("ctr pulled %s (%v), want %s", got, err, f.images["e2e/vsigned"].digest)
	}
}

// verifyCRI: a CRI pull (crictl) of a signed image succeeds and one of an
// unsigned image shows the 403.
func verifyCRI(t *testing.T, w *world, f *verifyFixture) {
	if _, err := exec.LookPath("crictl"); err != nil {
		t.Skip("no crictl")
	}
	crictl := func(args ...string) result {
		return runCmd(w.node.command(append([]string{"crictl", "--runtime-endpoint", "unix://" + w.ctrd.socket,
			"--image-endpoint", "unix://" + w.ctrd.socket, "--timeout", "60s"}, args...)...))
	}
	ref := verifyHost + "/e2e/vreferrer:1"
	defer crictl("rmi", ref)
	if r := crictl("pull", ref); r.err != nil {
		t.Fatalf("CRI pull of a signed image:\n%s", r)
	}
	r := crictl("pull", verifyHost+"/e2e/vunsigned:1")
	if r.err == nil {
		t.Fatalf("CRI pull of an unsigned image succeeded:\n%s", r)
	}
	if !strings.Contains(r.out, "403") {
		t.Errorf("the CRI pull's error does not show the 403:\n%s", r)
	}
	t.Logf("CRI pull of the unsigned image:\n%s", r)
}

// verifyRefusedWithReason: unsigned, other-key and tampered images are
// refused with the reason and audited, by skopeo and ctr.
func verifyRefusedWithReason(t *testing.T, w *world, f *verifyFixture) {
	for _, tc := range []struct{ repo, reason, result string }{
		{"e2e/vunsigned", "unsigned: no cosign signature", "unsigned"},
		{"e2e/votherkey", "invalid signature", "invalid"},
		{"e2e/vtampered", "invalid signature", "invalid"},
	} {
		refusedWith(t, w.pullVerify(t, verifyHost, tc.repo), f.images[tc.repo], tc.reason)
		rec := waitVerifyAudit(t, f.audit, func(r verifyRecord) bool {
			return r.Route == "verify" && r.Repository == tc.repo && r.Kind == "manifest" && r.Status == http.StatusForbidden
		})
		if rec.Signature != tc.result {
			t.Errorf("audit of %s: signature %q, want %q", tc.repo, rec.Signature, tc.result)
		}
	}
	ref := verifyHost + "/e2e/votherkey:1"
	r := runCmd(w.ctrd.ctr(w.node, "images", "pull", "--hosts-dir", w.ctrd.hostsDir, ref))
	if r.err == nil {
		t.Fatalf("ctr pull of an image signed by another key succeeded:\n%s", r)
	}
	if !strings.Contains(r.out, "403") {
		t.Errorf("ctr's error does not show the 403:\n%s", r)
	}
	t.Logf("ctr pull of the image signed by another key:\n%s", r)
}

// verifyUnsignedLayer: a layer of an unsigned image asked for by digest is
// refused; the verified image's is served.
func verifyUnsignedLayer(t *testing.T, w *world, f *verifyFixture) {
	u := f.images["e2e/vunsigned"]
	status, body := w.verifyRequest(t, verifyHost, "/v2/"+u.repo+"/blobs/"+u.layer)
	if status != http.StatusForbidden || !strings.Contains(string(body), `"DENIED"`) || !strings.Contains(string(body), "no verified manifest") {
		t.Errorf("GET of the unsigned image's layer: %d %s, want 403 DENIED", status, body)
	}
	s := f.images["e2e/vsigned"]
	if status, _ := w.verifyRequest(t, verifyHost, "/v2/"+s.repo+"/blobs/"+s.layer); status != http.StatusOK {
		t.Errorf("GET of the verified image's layer: %d, want 200", status)
	}
}

// verifySignedIndex: an index signed as a whole pulls, its platform
// image's layer audited as verified.
func verifySignedIndex(t *testing.T, w *world, f *verifyFixture) {
	if r := w.pullVerify(t, verifyHost, "e2e/vmulti"); r.err != nil {
		t.Fatalf("pull of the signed index:\n%s", r)
	}
	m := f.images["e2e/vmulti"]
	rec := waitVerifyAudit(t, f.audit, func(r verifyRecord) bool {
		return r.Route == "verify" && r.Repository == m.repo && r.Kind == "blob" && r.Digest == m.layer && r.Status == http.StatusOK
	})
	if rec.Signature != "verified" {
		t.Errorf("the platform image's layer: signature %q, want verified", rec.Signature)
	}
}

// verifyAuditMode: mode audit serves an unsigned image and records it as
// unsigned.
func verifyAuditMode(t *testing.T, w *world, f *verifyFixture) {
	if r := w.pullVerify(t, verifyAuditHost, "e2e/vaudit"); r.err != nil {
		t.Fatalf("pull of an unsigned image in audit mode:\n%s", r)
	}
	for _, kind := range []string{"manifest", "blob"} {
		rec := waitVerifyAudit(t, f.audit, func(r verifyRecord) bool {
			return r.Route == "verifyaudit" && r.Repository == "e2e/vaudit" && r.Kind == kind && r.Status == http.StatusOK
		})
		if rec.Signature != "unsigned" {
			t.Errorf("audit mode, %s: signature %q, want unsigned", kind, rec.Signature)
		}
	}
}

// verifyOffline: with the registries stopped, a verified image still
// pulls and an unverified one is refused by the policy; the decisions
// are kept in the cache.
func verifyOffline(t *testing.T, w *world, f *verifyFixture) {
	t.Cleanup(func() { w.restoreRegistries(t) })
	w.regA.proc.kill()
	w.regB.proc.kill()
	if r := w.pullVerify(t, verifyHost, "e2e/vsigned"); r.err != nil {
		t.Errorf("pull of the verified image with the registries stopped:\n%s", r)
	}
	r := w.pullVerify(t, verifyHost, "e2e/vunsigned")
	if r.err == nil || !strings.Contains(r.out, "refused by the signature policy") {
		t.Errorf("pull of the unverified image with the registries stopped: want a refusal by the policy:\n%s", r)
	}
	if _, err := os.Stat(filepath.Join(f.cache, "verify-decisions.jsonl")); err != nil {
		t.Errorf("the decisions are not kept in the cache: %v", err)
	}
}

// TestVerifyWithTheCredentialBroker: a route with http.auth (the gateway
// holds the registry's credentials, the node has none) and verify: the
// signatures are read with the gateway's credentials, so a signed image
// pulls and an unsigned one is refused by the policy (not by a 401).
func TestVerifyWithTheCredentialBroker(t *testing.T) {
	w := getWorld(t)
	regs := w.startAuthRegistries(t).regs
	pwFile := filepath.Join(w.dir, "registry.password")
	if err := os.WriteFile(pwFile, []byte(authPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	route := func(f string) string {
		return `  - name: verifyauth
    sni: ["` + verifyAuthHost + `"]
    mode: bridge
    upstreams: ["` + basicRegAddr + `"]
    health: {check: tcp}
    serve: {ca_cert: ` + filepath.Join(w.spec.serveCA, "ca.crt") + `, ca_key: ` + filepath.Join(w.spec.serveCA, "ca.key") + `}
    upstream_tls: {ca: ` + w.registryCA.file + `, server_name: ` + basicAuthHost + `}
    http:
      audit_log: ` + f + `
      auth: {username: ` + authUser + `, password_file: ` + pwFile + `}
      verify: {cosign: {keys: [` + filepath.Join(w.dir, "cosign-keys", "good.pub") + `]}}
`
	}
	f := w.getVerify(t, route(filepath.Join(w.dir, "verify-audit.log")))
	if r := w.pullVerify(t, verifyAuthHost, "e2e/vsigned"); r.err != nil {
		t.Fatalf("pull of a signed image through the credential broker:\n%s", r)
	}
	s := f.images["e2e/vsigned"]
	waitAuthorizedLog(t, regs[0], "/v2/"+s.repo+"/manifests/"+strings.Replace(s.digest, ":", "-", 1)+".sig")
	refusedWith(t, w.pullVerify(t, verifyAuthHost, "e2e/vunsigned"), f.images["e2e/vunsigned"], "unsigned")
}

// verifyRequest sends GET path from the node to host.
func (w *world) verifyRequest(t *testing.T, host, path string) (int, []byte) {
	t.Helper()
	conn, err := tlsDialIn(w.node, bastionAddr+":443", w.gatewayTLS(t, host))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	status, _, body, err := exchangeOn(conn, http.MethodGet, "https://"+host+path, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return status, body
}
