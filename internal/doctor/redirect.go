package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/snigate/snigate/oci"
)

// manifest is the part of an index or image manifest doctor reads.
type manifest struct {
	Manifests []struct {
		Digest string `json:"digest"`
	} `json:"manifests"`
	Config struct {
		Digest string `json:"digest"`
	} `json:"config"`
	Layers []struct {
		Digest string `json:"digest"`
	} `json:"layers"`
}

// redirect is steps "manifest" and "redirect": given NAME/REPOSITORY:TAG,
// it fetches the manifest (anonymously, with a token from the realm when
// there is one; a refusal is the manifest step's, manifestFailure) and one
// blob, and checks the host a blob redirect points to as realm checks the
// token host.
func (r *run) redirect(ctx context.Context) bool {
	if r.t.repo == "" {
		r.report(Result{Status: Warn, Step: "redirect", Found: "not checked: NAME names no image",
			Advice: "give NAME as " + r.t.registry() + "/REPOSITORY:TAG to fetch a blob and check the host it redirects to"})
		return true
	}
	hdr, res := r.token(ctx)
	if res != nil {
		r.report(*res)
		return res.Status != Fail
	}
	blob, res := r.blobDigest(ctx, hdr)
	if res != nil {
		r.report(*res)
		return res.Status != Fail
	}
	r.report(Result{Status: OK, Step: "manifest", Found: r.t.repo + ":" + r.t.ref + " read; its blob " + shortDigest(blob)})
	res = r.followBlob(ctx, blob, hdr)
	r.report(*res)
	return res.Status != Fail
}

// token gets an anonymous pull token from the realm; no realm, no token.
func (r *run) token(ctx context.Context) (http.Header, *Result) {
	hdr := http.Header{}
	if r.realm == nil {
		return hdr, nil
	}
	u, _ := url.Parse(r.realm.params["realm"])
	q := u.Query()
	if s := r.realm.params["service"]; s != "" {
		q.Set("service", s)
	}
	q.Set("scope", "repository:"+r.t.repo+":pull")
	u.RawQuery = q.Encode()
	resp, body, err := r.get(ctx, u.String(), nil)
	var tok struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.Token+tok.AccessToken == "" {
		return nil, &Result{Status: Warn, Step: "redirect", Found: "not checked: no anonymous token for " + r.t.repo + " from " + u.Redacted() + ": " + statusText(resp, err),
			Advice: "doctor pulls anonymously; with credentials, check the blob host by hand"}
	}
	if tok.Token == "" {
		tok.Token = tok.AccessToken
	}
	hdr.Set("Authorization", "Bearer "+tok.Token)
	return hdr, nil
}

func statusText(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// blobDigest reads the image's manifest (the first of an index) and
// returns its config blob's digest, else its first layer's.
func (r *run) blobDigest(ctx context.Context, hdr http.Header) (string, *Result) {
	ref := r.t.ref
	for range 2 { // an index, then one of its manifests
		m, res := r.manifest(ctx, ref, hdr)
		if res != nil {
			return "", res
		}
		switch {
		case len(m.Manifests) > 0:
			ref = m.Manifests[0].Digest
			continue
		case m.Config.Digest != "":
			return m.Config.Digest, nil
		case len(m.Layers) > 0:
			return m.Layers[0].Digest, nil
		}
		break
	}
	return "", &Result{Status: Fail, Step: "manifest", Found: "the manifest of " + r.t.repo + ":" + r.t.ref + " names no blob",
		Advice: "check the image"}
}

func (r *run) manifest(ctx context.Context, ref string, hdr http.Header) (manifest, *Result) {
	h := hdr.Clone()
	h.Set("Accept", oci.ManifestAccept)
	u := fmt.Sprintf("https://%s/v2/%s/manifests/%s", r.t.registry(), r.t.repo, ref)
	resp, body, err := r.get(ctx, u, h)
	if err != nil || resp.StatusCode != http.StatusOK {
		return manifest{}, r.manifestFailure(u, resp, body, err)
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return manifest{}, &Result{Status: Fail, Step: "manifest", Found: "manifest of " + ref + ": " + err.Error(), Advice: "check the image"}
	}
	return m, nil
}

// followBlob GETs the blob without following a redirect; a redirect's
// host is checked as another host of the pull.
func (r *run) followBlob(ctx context.Context, digest string, hdr http.Header) *Result {
	u := fmt.Sprintf("https://%s/v2/%s/blobs/%s", r.t.registry(), r.t.repo, digest)
	resp, _, err := r.get(ctx, u, hdr)
	if err != nil {
		return &Result{Status: Fail, Step: "redirect", Found: "GET " + u + ": " + err.Error(), Advice: r.useAdvice(err, r.t.host)}
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return &Result{Status: OK, Step: "redirect", Found: "none: blob " + shortDigest(digest) + " served by " + r.t.registry() + " itself"}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		loc, err := resp.Location()
		if err != nil {
			return &Result{Status: Fail, Step: "redirect", Found: fmt.Sprintf("blob %s: %d without a usable Location", shortDigest(digest), resp.StatusCode), Advice: "check the registry's storage redirect settings"}
		}
		res := r.otherHost(ctx, "redirect", loc)
		return &res
	}
	return &Result{Status: Fail, Step: "redirect", Found: fmt.Sprintf("GET blob %s: %s", shortDigest(digest), resp.Status), Advice: "check the registry and the gateway's log"}
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
