package oci

import (
	"net/url"
	"strings"
)

// Kind is what an OCI distribution API request addresses: the audit
// record's kind and the kind label of the http metrics.
type Kind string

// Kinds of API request (the audit record's kind, docs/configuration.md).
const (
	KindBase      Kind = "base"      // GET /v2/
	KindManifest  Kind = "manifest"  // /v2/<name>/manifests/<reference>
	KindBlob      Kind = "blob"      // /v2/<name>/blobs/<digest>
	KindTags      Kind = "tags"      // /v2/<name>/tags/list
	KindReferrers Kind = "referrers" // /v2/<name>/referrers/<digest>
	KindCatalog   Kind = "catalog"   // /v2/_catalog
	KindUpload    Kind = "upload"    // /v2/<name>/blobs/uploads/[<session>]
	KindOther     Kind = "other"     // anything else, including malformed names
)

// Kinds lists every Kind, for creating metric series.
var Kinds = []Kind{KindBase, KindManifest, KindBlob, KindTags, KindReferrers, KindCatalog, KindUpload, KindOther}

// MaxNameLen is the longest repository name accepted (the distribution
// specification's limit that registries enforce).
const MaxNameLen = 255

// API is an OCI distribution API path parsed once: policy, audit and the
// cache read it, never the raw path. Fields a kind does not have are "".
type API struct {
	Kind       Kind
	Repository string // the <name>: one or more path components
	Reference  string // manifests: the tag or digest in the path; uploads: the session id
	Digest     string // the digest in the path (a manifest by digest, a blob, referrers)
	// Uploads: a cross-repository blob mount's query
	// (POST /v2/<name>/blobs/uploads/?mount=<digest>&from=<repository>).
	From  string // the repository the blob is mounted from: a name, as Repository
	Mount string // the digest to mount
}

// ParsePath parses the escaped path of a request (URL.EscapedPath, no
// query). A path with percent-encoding, empty or dot segments, or a name
// or reference outside the distribution specification's grammar is
// KindOther with no repository: what the registry would make of it is not
// for the gateway to guess, so the repository allow-list refuses it.
//
// A name may contain the endpoint words ("a/manifests/manifests/v1" is the
// manifest v1 of "a/manifests"); the endpoint is read from the end of the
// path, as the distribution router's greedy name pattern does.
func ParsePath(path string) API {
	switch path {
	case "/v2/", "/v2":
		return API{Kind: KindBase}
	case "/v2/_catalog":
		return API{Kind: KindCatalog}
	}
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok || strings.ContainsAny(rest, "%\\") {
		return API{Kind: KindOther}
	}
	if api, ok := parseEndpoint(rest); ok && ValidName(api.Repository) {
		return api
	}
	return API{Kind: KindOther}
}

// ParseURL parses a request's URL: its path as ParsePath does, and the
// query of an upload, where a cross-repository mount names a second
// repository (from) that the blob is read from into the path's. A mount
// query the gateway cannot read as at most one valid from name and one
// valid mount digest (repeated, malformed, a query that does not parse,
// so that a registry might read it otherwise) is KindOther with no
// repository, as a malformed path is.
func ParseURL(u *url.URL) API {
	api := ParsePath(u.EscapedPath())
	if api.Kind != KindUpload || u.RawQuery == "" {
		return api
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return API{Kind: KindOther}
	}
	from, okFrom := queryValue(q, "from")
	mount, okMount := queryValue(q, "mount")
	if !okFrom || !okMount || from != "" && !ValidName(from) || mount != "" && !ValidDigest(mount) {
		return API{Kind: KindOther}
	}
	api.From, api.Mount = from, mount
	return api
}

// queryValue is the one value of the query parameter key, its name in any
// case; "" when absent, false when given more than once or empty.
func queryValue(q url.Values, key string) (string, bool) {
	var vals []string
	for k, v := range q {
		if strings.EqualFold(k, key) {
			vals = append(vals, v...)
		}
	}
	switch {
	case len(vals) == 0:
		return "", true
	case len(vals) > 1 || vals[0] == "":
		return "", false
	}
	return vals[0], true
}

// parseEndpoint reads the endpoint from the last segments of rest (the
// path after /v2/) and checks its reference or digest; the name, what is
// before them, is checked by the caller. Substrings of rest: no copy.
func parseEndpoint(rest string) (API, bool) {
	head, last, ok := cutLast(rest)
	if !ok {
		return API{}, false
	}
	name, prev, ok := cutLast(head)
	if !ok {
		return API{}, false
	}
	switch {
	case prev == "tags" && last == "list":
		return API{Kind: KindTags, Repository: name}, true
	case prev == "manifests":
		return manifest(name, last)
	case prev == "referrers":
		return API{Kind: KindReferrers, Repository: name, Digest: last}, ValidDigest(last)
	case prev == "uploads":
		if repo, blobs, ok := cutLast(name); ok && blobs == "blobs" {
			return API{Kind: KindUpload, Repository: repo, Reference: last}, last == "" || validSession(last)
		}
	case prev == "blobs" && last == "uploads":
		return API{Kind: KindUpload, Repository: name}, true
	case prev == "blobs":
		return API{Kind: KindBlob, Repository: name, Digest: last}, ValidDigest(last)
	}
	return API{}, false
}

// cutLast cuts s at its last slash; false when it has none.
func cutLast(s string) (before, last string, ok bool) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

// manifest is the manifest endpoint for reference ref: a tag or a digest.
func manifest(name, ref string) (API, bool) {
	api := API{Kind: KindManifest, Repository: name, Reference: ref}
	if strings.Contains(ref, ":") {
		api.Digest = ref
		return api, ValidDigest(ref)
	}
	return api, ValidTag(ref)
}
