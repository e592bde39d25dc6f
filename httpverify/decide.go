package httpverify

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/snigate/snigate/oci"
)

// decide returns the outcome for digest of repo: a remembered verified
// decision that still holds with the configured keys, else the
// signatures read (through next) and checked now. body, when it is the
// digest's content, tells what a verified manifest references.
func (v *Verify) decide(r *http.Request, next http.Handler, repo, digest string, body []byte) outcome {
	key := repo + "@" + digest
	if o, ok := v.remembered(key, body); ok {
		return o
	}
	unlock, err := v.checking.lock(r.Context(), key)
	if err != nil {
		return outcome{result: ResultError, reason: fmt.Sprintf("the node left while its signatures were checked: %v", err)}
	}
	defer unlock()
	if o, ok := v.remembered(key, body); ok { // decided while this request waited
		return o
	}
	c := &checker{keys: v.cfg.Keys, notation: v.cfg.Notation, f: fetcher{next: next, node: r}, repo: repo, dig: digest, registry: registryOf(r)}
	o := c.check()
	if o.result == ResultVerified {
		v.remember(key, &decision{Keys: o.keys}, body)
	}
	return o
}

// registryOf is the registry's name as the node asked for it (its Host).
func registryOf(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	return r.URL.Host
}

// remembered is key's remembered decision, if it holds; body (the
// manifest's content, or nil) completes what it references.
func (v *Verify) remembered(key string, body []byte) (outcome, bool) {
	d, ok := v.dec.lookup(key, v.trusted)
	if !ok {
		return outcome{}, false
	}
	if body != nil && d.Blobs == nil && d.Children == nil {
		v.remember(key, d, body)
	}
	return outcome{result: ResultVerified, keys: d.Keys}, true
}

// remember records a verified decision with what body (nil: not seen)
// references: an index's manifests, an image manifest's blobs.
func (v *Verify) remember(key string, d *decision, body []byte) {
	nd := &decision{Keys: d.Keys, Via: d.Via, Blobs: d.Blobs, Children: d.Children, Time: time.Now().UTC()}
	if body != nil {
		if m, err := ParseManifest(body); err == nil {
			nd.Blobs, nd.Children = m.Blobs(), m.Children()
		}
	}
	v.dec.record(key, nd)
}

// decided counts, audits and logs o for the request; it reports whether
// the request is served (verified, skipped, or audit mode).
func (v *Verify) decided(r *http.Request, api oci.API, o outcome) bool {
	v.cfg.Metrics.count(v.cfg.Route, o.result)
	oci.AnnotationFrom(r.Context()).SetSignature(o.result)
	ok := o.result == ResultVerified || o.result == ResultSkipped
	if ok {
		return true
	}
	serve := v.cfg.Mode == ModeAudit
	msg := "image refused by the signature policy"
	if serve {
		msg = "image not verified by the signature policy, served (mode: audit)"
	}
	v.warn.Log(v.cfg.Log, slog.LevelWarn, o.result, msg, "route", v.cfg.Route, "client", r.RemoteAddr,
		"repository", api.Repository, "reference", bound(api.Reference), "result", o.result, "reason", o.reason)
	return serve
}

// refuse answers 403 DENIED naming the image and the reason.
func (v *Verify) refuse(w http.ResponseWriter, r *http.Request, image string, o outcome) {
	msg := fmt.Sprintf("image %s refused by the signature policy of route %q: %s", image, v.cfg.Route, o.reason)
	oci.AnnotationFrom(r.Context()).Fail(errors.New(msg), false)
	oci.WriteError(w, http.StatusForbidden, oci.CodeDenied, msg)
}
