package httpverify

import (
	"fmt"
	"net/http"

	"github.com/snigate/snigate/oci"
)

// Wrap is the link (httpbridge.Chain): next is the rest of the chain
// (the cache, the proxy), through which the manifests, blobs and
// signatures are read, so that signatures are cached like manifests; the
// upstream RoundTripper is not used (reading through next keeps the
// cache's and the proxy's rules for every byte).
func (v *Verify) Wrap(next http.Handler, _ http.RoundTripper) http.Handler {
	return &gate{v: v, next: next}
}

type gate struct {
	v    *Verify
	next http.Handler
}

// ServeHTTP gates GET and HEAD of manifests and blobs; everything else
// (the base, tags, referrers, uploads, other methods) goes to next.
func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := oci.RequestAPI(r)
	gated := (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(api.Kind == oci.KindManifest || api.Kind == oci.KindBlob)
	if !gated {
		g.next.ServeHTTP(w, r)
		return
	}
	if len(g.v.cfg.Repositories) > 0 && !g.v.cfg.Repositories.Allows(api.Repository) {
		g.v.decided(r, api, outcome{result: ResultSkipped})
		g.next.ServeHTTP(w, r)
		return
	}
	if api.Kind == oci.KindBlob {
		g.blob(w, r, api)
		return
	}
	g.manifest(w, r, api)
}

// blob serves a blob only when a verified manifest of its repository
// references it.
func (g *gate) blob(w http.ResponseWriter, r *http.Request, api oci.API) {
	o := outcome{result: ResultVerified}
	if !g.v.dec.blobAllowed(api.Repository, api.Digest, g.v.trusted) {
		o = outcome{result: ResultUnsigned, reason: "no verified manifest of " + api.Repository + " references this blob: pull the image by its signed tag or digest"}
	}
	if g.v.decided(r, api, o) {
		g.next.ServeHTTP(w, r)
		return
	}
	g.v.refuse(w, r, api.Repository+"@"+api.Digest, o)
}

// manifest holds the rest of the chain's answer (at most MaxManifest),
// decides on the digest the node would get, and serves or refuses. An
// answer that is not 2xx (a 401 challenge, a 404) is passed as it is.
func (g *gate) manifest(w http.ResponseWriter, r *http.Request, api oci.API) {
	rec := newRecorder(MaxManifest)
	if err := serveInto(g.next, rec, r); err != nil && !rec.overflow {
		panic(http.ErrAbortHandler) // the upstream failed mid-answer: the node's is aborted as the proxy's would be
	}
	head := r.Method == http.MethodHead
	if !rec.overflow && (rec.status < 200 || rec.status > 299) {
		rec.writeTo(w, head)
		return
	}
	digest, body := g.answerDigest(api, rec, head)
	var o outcome
	switch {
	case rec.overflow:
		o = outcome{result: ResultError, reason: fmt.Sprintf("the manifest is larger than the %d bytes the gateway verifies", MaxManifest)}
	case digest == "":
		o = outcome{result: ResultError, reason: "the registry's answer names no digest to verify"}
	default:
		o = g.v.decide(r, g.next, api.Repository, digest, body)
	}
	ann := oci.AnnotationFrom(r.Context())
	if api.Digest == "" && digest != "" {
		ann.SetDigest(digest)
	}
	if !g.v.decided(r, api, o) {
		g.v.refuse(w, r, imageName(api, digest), o)
		return
	}
	if rec.overflow { // audit mode: the answer could not be held; the node asks again
		oci.WriteError(w, http.StatusServiceUnavailable, oci.CodeUnavailable, "the manifest is too large for the gateway to verify")
		return
	}
	rec.writeTo(w, head)
}

// answerDigest is the digest of the answer the node would get: the
// path's for a manifest by digest, else the body's (GET) or the
// registry's Docker-Content-Digest (HEAD); and the body when it is the
// content of that digest (to learn what the manifest references).
func (g *gate) answerDigest(api oci.API, rec *recorder, head bool) (string, []byte) {
	body := rec.body.Bytes()
	switch {
	case head && api.Digest != "":
		return api.Digest, nil
	case head:
		if d := rec.header.Get("Docker-Content-Digest"); oci.ValidDigest(d) {
			return d, nil
		}
		return "", nil
	case api.Digest != "":
		if digestMatches(api.Digest, body) {
			return api.Digest, body
		}
		return api.Digest, nil
	}
	return digestOf(rec.header.Get("Docker-Content-Digest"), body), body
}

// imageName is repository@digest, else repository:tag.
func imageName(api oci.API, digest string) string {
	if digest != "" {
		return api.Repository + "@" + digest
	}
	return api.Repository + ":" + api.Reference
}
