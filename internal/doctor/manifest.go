package doctor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// manifestFailure is step "manifest": the registry, or the gateway's
// policy in front of it, answered the image's manifest with status, and
// the advice fits that status (a 403 is a refusal, a 404 an unknown
// image), not a blob redirect.
func (r *run) manifestFailure(u string, resp *http.Response, body []byte, err error) *Result {
	res := &Result{Status: Fail, Step: "manifest", Found: "GET " + u + ": " + statusText(resp, err)}
	if err != nil {
		res.Advice = r.useAdvice(err, r.t.host)
		return res
	}
	if msg := ociErrors(body); msg != "" {
		res.Found += " (" + msg + ")"
	}
	image := r.t.repo + ":" + r.t.ref
	if resp.StatusCode == http.StatusForbidden && strings.Contains(res.Found, SignaturePolicyRefusal) {
		res.Advice = "the gateway's signature policy refused " + image + " (the reason above): sign the image with a key listed in the route's " +
			"http.verify.cosign.keys (cosign sign --key), or leave its repository out of http.verify.repositories"
		return res
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		res.Status = Warn
		res.Advice = "the registry wants credentials to read " + r.t.repo + ": doctor pulls anonymously; a runtime with credentials for it may still pull"
	case http.StatusForbidden:
		res.Advice = "reading " + r.t.repo + " is refused: on the gateway, add it to the route's http.repositories (DENIED from the gateway), " +
			"else ask the registry's owner to let the edge identity pull it"
	case http.StatusNotFound:
		res.Advice = "the registry has no " + image + ": check the repository and the tag (NAME is " + r.t.registry() +
			"/REPOSITORY:TAG, the repository without the registry's host)"
	case http.StatusMethodNotAllowed:
		res.Advice = "the gateway refuses GET: add GET to the route's http.methods"
	default:
		res.Advice = "check the registry and the gateway's log (on the gateway: snigate ctl upstreams)"
	}
	return res
}

// SignaturePolicyRefusal is in the message of the gateway's refusals by
// its signature policy (routes[].http.verify).
const SignaturePolicyRefusal = "refused by the signature policy"

// maxOCIErrors bounds the codes and messages of an error body shown: a
// signature refusal names the image by digest and the reason.
const maxOCIErrors = 400

// ociErrors is the codes and messages of an OCI error body, "" if body is
// not one.
func ociErrors(body []byte) string {
	var e struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	var parts []string
	for _, x := range e.Errors {
		p := x.Code
		if x.Message != "" {
			p += ": " + x.Message
		}
		parts = append(parts, p)
	}
	if s := strings.Join(parts, "; "); len(s) <= maxOCIErrors {
		return s
	}
	return fmt.Sprintf("%d errors", len(parts))
}
