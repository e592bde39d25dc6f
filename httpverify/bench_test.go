package httpverify

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/snigate/snigate/oci"
)

// benchRequest sends GET path through h, as the bridge does.
func benchRequest(b *testing.B, h http.Handler, path string) {
	r := httptest.NewRequest(http.MethodGet, "https://registry.example"+path, nil)
	r = r.WithContext(oci.WithAnnotation(r.Context(), oci.NewAnnotation(oci.ParseURL(r.URL))))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
}

// BenchmarkDecision is the gate's cost per manifest request: a first
// decision (the signature tag and payload read, the signature verified,
// the decision recorded) for each form, and a remembered one.
func BenchmarkDecision(b *testing.B) {
	s := newSigner(b)
	notary := newNotary(b, "bench")
	store, policy := trustDir(b, "*", notary)
	n, err := LoadNotation(store, policy)
	if err != nil {
		b.Fatal(err)
	}
	reg := newFakeRegistry()
	const images = 64
	var tagForm, bundleForm, notationForm []string
	for i := range images {
		d := reg.pushImage(b, "team/app", fmt.Sprint("t", i), fmt.Sprint("tag", i))
		reg.signTag(b, s, "team/app", d, nil, false)
		tagForm = append(tagForm, d)
		d = reg.pushImage(b, "team/app", fmt.Sprint("b", i), fmt.Sprint("bundle", i))
		reg.bundleReferrer(b, s, "team/app", d, true)
		bundleForm = append(bundleForm, d)
		d = reg.pushImage(b, "team/app", fmt.Sprint("n", i), fmt.Sprint("notation", i))
		reg.notationReferrer(b, notary, "team/app", d, true, false)
		notationForm = append(notationForm, d)
	}
	newGate := func() (*Verify, http.Handler) {
		v, err := New(Config{Route: "bench", Keys: []Key{s.key}, Notation: n, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		return v, v.Wrap(reg, nil)
	}
	for _, tc := range []struct {
		name    string
		digests []string
	}{{"first/tag", tagForm}, {"first/bundle", bundleForm}, {"first/notation", notationForm}} {
		b.Run(tc.name, func(b *testing.B) {
			v, h := newGate()
			i := 0
			for b.Loop() {
				if i%images == 0 { // every digest decided: forget them all
					v.dec = newDecisions("", v.cfg.Log)
				}
				benchRequest(b, h, "/v2/team/app/manifests/"+tc.digests[i%images])
				i++
			}
		})
	}
	b.Run("remembered", func(b *testing.B) {
		_, h := newGate()
		benchRequest(b, h, "/v2/team/app/manifests/"+tagForm[0])
		for b.Loop() {
			benchRequest(b, h, "/v2/team/app/manifests/"+tagForm[0])
		}
	})
	b.Run("no verify", func(b *testing.B) {
		for b.Loop() {
			benchRequest(b, reg, "/v2/team/app/manifests/"+tagForm[0])
		}
	})
}
