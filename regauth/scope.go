package regauth

import (
	"net/http"
	"slices"
	"strings"
)

// Token scope actions (distribution token specification).
const (
	actionPull   = "pull"
	actionPush   = "push"
	actionDelete = "delete"
)

// RepositoryOf returns the repository an OCI distribution API path names
// (/v2/NAME/manifests/REF, /v2/NAME/blobs/DIGEST, /v2/NAME/blobs/uploads/,
// /v2/NAME/tags/list, /v2/NAME/referrers/DIGEST), and false for other
// paths (/v2/, /v2/_catalog).
func RepositoryOf(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return "", false
	}
	segs := strings.Split(rest, "/")
	n := len(segs)
	var repo []string
	switch {
	case n >= 4 && segs[n-3] == "blobs" && segs[n-2] == "uploads":
		repo = segs[:n-3]
	case n >= 3 && (segs[n-2] == "manifests" || segs[n-2] == "blobs" || segs[n-2] == "referrers") && segs[n-1] != "":
		repo = segs[:n-2]
	case n >= 3 && segs[n-2] == "tags" && segs[n-1] == "list":
		repo = segs[:n-2]
	default:
		return "", false
	}
	if slices.Contains(repo, "") {
		return "", false
	}
	return strings.Join(repo, "/"), true
}

// catalogScope is the registry catalog's scope ("registry:catalog:*")
// for a GET or HEAD of /v2/_catalog, when the registry's challenge asks
// for it (or none is known yet); "" otherwise. The route's policy has
// let the request through: a route with a repository allow-list refuses
// the catalog before it reaches the Transport (a catalog names every
// repository), and methods allow GET.
func catalogScope(r *http.Request, challenged string) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return ""
	}
	if challenged == "" || slices.Contains(strings.Fields(challenged), catalogScopeAll) {
		return catalogScopeAll
	}
	return ""
}

// catalogScopeAll is the catalog scope distribution's registry asks for.
const catalogScopeAll = "registry:catalog:*"

// isWriteMethod reports whether method changes the registry.
func isWriteMethod(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// actionsFor are the actions a request may have a token for: pull, and
// push and delete when it writes and writing is allowed.
func actionsFor(method string, writeAllowed bool) []string {
	if !isWriteMethod(method) || !writeAllowed {
		return []string{actionPull}
	}
	if method == http.MethodDelete {
		return []string{actionPull, actionPush, actionDelete}
	}
	return []string{actionPull, actionPush}
}

// requestScope is the scope the gateway expects a request for repo (""
// for none) to need: "repository:NAME:pull" (or pull,push for a write that is allowed, and
// delete for an allowed DELETE), "" for a path that names no repository.
func requestScope(r *http.Request, repo string, writeAllowed bool) string {
	if repo == "" {
		return ""
	}
	acts := actionsFor(r.Method, writeAllowed)
	if r.Method == http.MethodDelete && writeAllowed {
		acts = []string{actionDelete}
	}
	return "repository:" + repo + ":" + strings.Join(acts, ",")
}

// grantScope is the part of a challenged scope the gateway asks a token
// for: repository entries for the request's repository (repo) (or the one a
// cross-repository mount reads from), their actions cut down to what the
// request may do. Anything else the registry asks for is dropped; when
// nothing is left, the request's own scope is used.
func grantScope(challenged string, r *http.Request, repo string, writeAllowed bool) string {
	if repo == "" {
		return ""
	}
	allowed := actionsFor(r.Method, writeAllowed)
	from := r.URL.Query().Get("from")
	var out []string
	for _, e := range strings.Fields(challenged) {
		typ, rest, ok1 := strings.Cut(e, ":")
		i := strings.LastIndexByte(rest, ':')
		if !ok1 || i <= 0 || typ != "repository" {
			continue
		}
		name, acts := rest[:i], strings.Split(rest[i+1:], ",")
		if name != repo && (name != from || from == "") {
			continue
		}
		may := allowed
		if name != repo {
			may = []string{actionPull} // a mount's source is only read
		}
		if keep := intersect(acts, may); len(keep) > 0 {
			out = append(out, "repository:"+name+":"+strings.Join(keep, ","))
		}
	}
	if len(out) == 0 {
		return requestScope(r, repo, writeAllowed)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), " ")
}

// intersect returns the actions of want that allowed holds, in allowed's
// order.
func intersect(want, allowed []string) []string {
	var out []string
	for _, a := range allowed {
		if slices.Contains(want, a) || slices.Contains(want, "*") && a != actionDelete {
			out = append(out, a)
		}
	}
	return out
}
