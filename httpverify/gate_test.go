package httpverify

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/snigate/snigate/oci"
)

// world is a gate over a fake registry.
type world struct {
	reg  *fakeRegistry
	v    *Verify
	h    http.Handler
	good *signer
	m    *Metrics
}

func newWorld(t *testing.T, cfg Config, keys ...*signer) *world {
	t.Helper()
	w := &world{reg: newFakeRegistry(), good: newSigner(t), m: NewMetrics(prometheus.NewRegistry())}
	if len(keys) == 0 {
		keys = []*signer{w.good}
	}
	for _, k := range keys {
		cfg.Keys = append(cfg.Keys, k.key)
	}
	cfg.Route, cfg.Metrics, cfg.Log = "registry", w.m, slog.New(slog.DiscardHandler)
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.v, w.h = v, v.Wrap(w.reg, nil)
	return w
}

// get sends a node request through the gate with an annotation, as the
// bridge's policy does; it returns the answer and the audit's signature.
func (w *world) get(t *testing.T, method, path string) (*httptest.ResponseRecorder, oci.Facts) {
	t.Helper()
	r := httptest.NewRequest(method, "https://registry.example"+path, nil)
	ann := oci.NewAnnotation(oci.ParseURL(r.URL))
	r = r.WithContext(oci.WithAnnotation(r.Context(), ann))
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, r)
	return rec, ann.Facts()
}

func denied(t *testing.T, rec *httptest.ResponseRecorder, want ...string) {
	t.Helper()
	if rec.Code != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", rec.Code, rec.Body)
	}
	var body oci.ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 || body.Errors[0].Code != oci.CodeDenied {
		t.Fatalf("body %s, want one DENIED error", rec.Body)
	}
	for _, s := range want {
		if !strings.Contains(body.Errors[0].Message, s) {
			t.Fatalf("message %q does not say %q", body.Errors[0].Message, s)
		}
	}
}

func TestGateManifest(t *testing.T) {
	other := newSigner(t)
	tests := []struct {
		name   string
		sign   func(w *world, d string)
		path   func(d string) string
		result string
		want   []string // in a refusal's message
	}{
		{name: "signature tag by digest", sign: func(w *world, d string) { w.reg.signTag(t, w.good, "team/app", d, nil, false) }, result: ResultVerified},
		{name: "signature tag by tag", sign: func(w *world, d string) { w.reg.signTag(t, w.good, "team/app", d, nil, false) },
			path: func(string) string { return "/v2/team/app/manifests/v1" }, result: ResultVerified},
		{name: "cosign referrer, referrers API", sign: func(w *world, d string) { w.reg.cosignReferrer(t, w.good, "team/app", d, true) }, result: ResultVerified},
		{name: "cosign referrer, tag schema", sign: func(w *world, d string) { w.reg.cosignReferrer(t, w.good, "team/app", d, false) }, result: ResultVerified},
		{name: "sigstore bundle referrer", sign: func(w *world, d string) { w.reg.bundleReferrer(t, w.good, "team/app", d, true) }, result: ResultVerified},
		{name: "sigstore bundle, tag schema", sign: func(w *world, d string) { w.reg.bundleReferrer(t, w.good, "team/app", d, false) }, result: ResultVerified},
		{name: "unsigned", sign: func(*world, string) {}, result: ResultUnsigned, want: []string{"team/app@sha256:", "unsigned"}},
		{name: "unsigned by tag", sign: func(*world, string) {}, path: func(string) string { return "/v2/team/app/manifests/v1" },
			result: ResultUnsigned, want: []string{"team/app@sha256:", "unsigned"}},
		{name: "another key", sign: func(w *world, d string) { w.reg.signTag(t, other, "team/app", d, nil, false) },
			result: ResultInvalid, want: []string{"invalid signature", "no configured key"}},
		{name: "another key's bundle", sign: func(w *world, d string) { w.reg.bundleReferrer(t, other, "team/app", d, true) },
			result: ResultInvalid, want: []string{"invalid signature"}},
		{name: "tampered signature", sign: func(w *world, d string) { w.reg.signTag(t, w.good, "team/app", d, nil, true) },
			result: ResultInvalid, want: []string{"invalid signature"}},
		{name: "payload of another digest", sign: func(w *world, d string) {
			w.reg.signTag(t, w.good, "team/app", d, simplePayload("team/app", "sha256:"+strings.Repeat("0", 64)), false)
		}, result: ResultInvalid, want: []string{"names sha256:0000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, Config{})
			d := w.reg.pushImage(t, "team/app", "v1", "a")
			tc.sign(w, d)
			path := "/v2/team/app/manifests/" + d
			if tc.path != nil {
				path = tc.path(d)
			}
			rec, facts := w.get(t, http.MethodGet, path)
			if facts.Signature != tc.result {
				t.Fatalf("signature %q, want %q (status %d %s)", facts.Signature, tc.result, rec.Code, rec.Body)
			}
			if got := testutil.ToFloat64(w.m.decisions.WithLabelValues("registry", tc.result)); got != 1 {
				t.Fatalf("snigate_verify_total{result=%q} = %v, want 1", tc.result, got)
			}
			if tc.result != ResultVerified {
				denied(t, rec, tc.want...)
				return
			}
			if rec.Code != http.StatusOK || digestOf("", rec.Body.Bytes()) != d {
				t.Fatalf("status %d, body of %s, want 200 with the manifest %s", rec.Code, digestOf("", rec.Body.Bytes()), d)
			}
		})
	}
}

func TestGateBlobOnlyOfVerifiedManifest(t *testing.T) {
	w := newWorld(t, Config{})
	signed := w.reg.pushImage(t, "team/app", "v1", "signed")
	w.reg.signTag(t, w.good, "team/app", signed, nil, false)
	unsigned := w.reg.pushImage(t, "team/app", "v2", "unsigned")
	layerOf := func(content string) string { return "/v2/team/app/blobs/" + digestOf("", []byte("layer"+content)) }

	rec, _ := w.get(t, http.MethodGet, layerOf("signed"))
	denied(t, rec, "no verified manifest") // before its manifest was pulled
	if rec, _ = w.get(t, http.MethodGet, "/v2/team/app/manifests/v1"); rec.Code != http.StatusOK {
		t.Fatalf("signed manifest: %d %s", rec.Code, rec.Body)
	}
	if rec, facts := w.get(t, http.MethodGet, layerOf("signed")); rec.Code != http.StatusOK || facts.Signature != ResultVerified {
		t.Fatalf("signed image's layer: %d %q %s", rec.Code, facts.Signature, rec.Body)
	}
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+unsigned); rec.Code != http.StatusForbidden {
		t.Fatalf("unsigned manifest: %d", rec.Code)
	}
	rec, facts := w.get(t, http.MethodGet, layerOf("unsigned"))
	denied(t, rec, "team/app@sha256:", "no verified manifest of team/app references this blob")
	if facts.Signature != ResultUnsigned {
		t.Fatalf("signature %q", facts.Signature)
	}
}

func TestGateIndexSignatureCoversItsManifests(t *testing.T) {
	w := newWorld(t, Config{})
	amd := w.reg.pushImage(t, "team/app", "amd64", "amd")
	arm := w.reg.pushImage(t, "team/app", "arm64", "arm")
	idx := mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtIndex, "manifests": []any{
		map[string]any{"mediaType": mtManifest, "digest": amd, "size": 1, "platform": map[string]string{"os": "linux", "architecture": "amd64"}},
		map[string]any{"mediaType": mtManifest, "digest": arm, "size": 1}}})
	id := w.reg.put("/v2/team/app/manifests/multi", mtIndex, idx)
	w.reg.put("/v2/team/app/manifests/"+id, mtIndex, idx)
	w.reg.signTag(t, w.good, "team/app", id, nil, false)
	other := w.reg.pushImage(t, "team/app", "other", "other")

	for _, p := range []string{"/v2/team/app/manifests/multi", "/v2/team/app/manifests/" + amd, "/v2/team/app/blobs/" + digestOf("", []byte("layeramd"))} {
		if rec, facts := w.get(t, http.MethodGet, p); rec.Code != http.StatusOK || facts.Signature != ResultVerified {
			t.Fatalf("%s: %d %q %s", p, rec.Code, facts.Signature, rec.Body)
		}
	}
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+other); rec.Code != http.StatusForbidden {
		t.Fatalf("a manifest the index does not list: %d", rec.Code)
	}
}

func TestGateAuditModeServesAndRecords(t *testing.T) {
	w := newWorld(t, Config{Mode: ModeAudit})
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/v1")
	if rec.Code != http.StatusOK || facts.Signature != ResultUnsigned || facts.Digest != d {
		t.Fatalf("audit mode: %d signature %q digest %q, want 200 unsigned %s", rec.Code, facts.Signature, facts.Digest, d)
	}
	rec, facts = w.get(t, http.MethodGet, "/v2/team/app/blobs/"+digestOf("", []byte("layera")))
	if rec.Code != http.StatusOK || facts.Signature != ResultUnsigned {
		t.Fatalf("audit mode blob: %d %q", rec.Code, facts.Signature)
	}
}

func TestGateRepositoriesLimitWhatMustBeSigned(t *testing.T) {
	repos, err := oci.NewRepoAllowList([]string{"team/**"})
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, Config{Repositories: repos})
	w.reg.pushImage(t, "base/os", "v1", "a")
	w.reg.pushImage(t, "team/app", "v1", "a")
	if rec, facts := w.get(t, http.MethodGet, "/v2/base/os/manifests/v1"); rec.Code != http.StatusOK || facts.Signature != ResultSkipped {
		t.Fatalf("base/os: %d %q", rec.Code, facts.Signature)
	}
	if rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/v1"); rec.Code != http.StatusForbidden || facts.Signature != ResultUnsigned {
		t.Fatalf("team/app: %d %q", rec.Code, facts.Signature)
	}
}

func TestGatePassesTheRegistrysRefusals(t *testing.T) {
	w := newWorld(t, Config{})
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/v9")
	if rec.Code != http.StatusNotFound || facts.Signature != "" {
		t.Fatalf("missing manifest: %d %q, want the registry's 404 undecided", rec.Code, facts.Signature)
	}
}

func TestDecisionsPersistAndHoldOffline(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DecisionsFile)
	w := newWorld(t, Config{DecisionsPath: path})
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.signTag(t, w.good, "team/app", d, nil, false)
	unsigned := w.reg.pushImage(t, "team/app", "v2", "b")
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
		t.Fatalf("first pull: %d %s", rec.Code, rec.Body)
	}

	// A restart: a new policy over the same file, signatures unreadable
	// (the registry answers only manifests and blobs by digest, as a cache
	// offline does).
	again, err := New(Config{Route: "registry", Keys: []Key{w.good.key}, DecisionsPath: path})
	if err != nil {
		t.Fatal(err)
	}
	sigTag := "/v2/team/app/manifests/" + tagOf(d) + ".sig"
	before := w.reg.count(sigTag)
	w.h = again.Wrap(w.reg, nil)
	for _, p := range []string{"/v2/team/app/manifests/" + d, "/v2/team/app/blobs/" + digestOf("", []byte("layera"))} {
		if rec, facts := w.get(t, http.MethodGet, p); rec.Code != http.StatusOK || facts.Signature != ResultVerified {
			t.Fatalf("after restart %s: %d %q %s", p, rec.Code, facts.Signature, rec.Body)
		}
	}
	if w.reg.count(sigTag) != before {
		t.Fatal("a remembered decision read the signature again")
	}
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+unsigned); rec.Code != http.StatusForbidden {
		t.Fatalf("unverified after restart: %d", rec.Code)
	}
}

func TestRemovedKeyInvalidatesItsDecisions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DecisionsFile)
	w := newWorld(t, Config{DecisionsPath: path})
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.signTag(t, w.good, "team/app", d, nil, false)
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
		t.Fatalf("first pull: %d", rec.Code)
	}
	// The reload: the key is replaced by another one.
	other := newSigner(t)
	again, err := New(Config{Route: "registry", Keys: []Key{other.key}, DecisionsPath: path})
	if err != nil {
		t.Fatal(err)
	}
	w.h = again.Wrap(w.reg, nil)
	w.reg.setDown(false)
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/blobs/"+digestOf("", []byte("layera")))
	if rec.Code != http.StatusForbidden {
		t.Fatalf("blob after the key was removed: %d %q", rec.Code, facts.Signature)
	}
	rec, facts = w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d)
	if rec.Code != http.StatusForbidden || facts.Signature != ResultInvalid {
		t.Fatalf("after the key was removed: %d %q, want 403 invalid", rec.Code, facts.Signature)
	}
}

func TestGateRegistryDownRefusesUnverified(t *testing.T) {
	w := newWorld(t, Config{})
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.signTag(t, w.good, "team/app", d, nil, false)
	// The manifest answers, the signatures do not.
	w.reg.mu.Lock()
	delete(w.reg.paths, "/v2/team/app/manifests/"+tagOf(d)+".sig")
	w.reg.mu.Unlock()
	w.reg.put("/v2/team/app/referrers/"+d, "text/plain", nil)
	rec, facts := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d)
	if rec.Code != http.StatusForbidden || facts.Signature == ResultVerified {
		t.Fatalf("%d %q", rec.Code, facts.Signature)
	}
}

// TestDecisionsFileCutByACrash: a last line cut short (a crash while
// appending) loses that decision only; the others load.
func TestDecisionsFileCutByACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), DecisionsFile)
	w := newWorld(t, Config{DecisionsPath: path})
	a := w.reg.pushImage(t, "team/app", "v1", "a")
	b := w.reg.pushImage(t, "team/app", "v2", "b")
	for _, d := range []string{a, b} {
		w.reg.signTag(t, w.good, "team/app", d, nil, false)
		if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
			t.Fatalf("pull %s: %d", d, rec.Code)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines in the decisions file, want 2:\n%s", len(lines), data)
	}
	if err := os.WriteFile(path, []byte(lines[0]+lines[1][:len(lines[1])/2]), 0o640); err != nil {
		t.Fatal(err)
	}
	again, err := New(Config{Route: "registry", Keys: []Key{w.good.key}, DecisionsPath: path, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.dec.lookup("team/app@"+a, again.trusted); !ok {
		t.Error("the whole first line was not loaded")
	}
	if _, ok := again.dec.lookup("team/app@"+b, again.trusted); ok {
		t.Error("the cut line was loaded")
	}
}

// TestDecisionsFileCompacted: a file of many more lines than decisions
// (one digest decided again and again, as after keys changed back and
// forth) is not written by New, and is rewritten with one line per
// decision by the next decision.
func TestDecisionsFileCompacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), DecisionsFile)
	line := `{"key":"team/app@sha256:` + strings.Repeat("a", 64) + `","decision":{"keys":["sha256:x"],"time":"2026-12-01T00:00:00Z"}}` + "\n"
	if err := os.WriteFile(path, []byte(strings.Repeat(line, 3000)), 0o640); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, Config{DecisionsPath: path})
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 3000 {
		t.Fatal("New wrote the decisions file")
	}
	d := w.reg.pushImage(t, "team/app", "v1", "a")
	w.reg.signTag(t, w.good, "team/app", d, nil, false)
	if rec, _ := w.get(t, http.MethodGet, "/v2/team/app/manifests/"+d); rec.Code != http.StatusOK {
		t.Fatalf("pull: %d", rec.Code)
	}
	if b, _ := os.ReadFile(path); strings.Count(string(b), "\n") != 2 {
		t.Fatalf("after a decision the file has %d lines, want 2 (compacted)", strings.Count(string(b), "\n"))
	}
}
