package oci

import (
	"strings"
	"testing"
)

// FuzzParsePath: no panic; a path with a repository has a name of the
// distribution grammar within MaxNameLen, and the path is rebuilt from
// the parsed value exactly (the parser read what is there, nothing else).
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"/v2/", "/v2/_catalog", "/v2/team/app/manifests/v1", "/v2/team/app/manifests/" + dgst,
		"/v2/a/b/c/blobs/" + dgst, "/v2/app/blobs/uploads/", "/v2/app/blobs/uploads/abc-123",
		"/v2/app/tags/list", "/v2/app/referrers/" + dgst, "/v2/a/manifests/manifests/v1",
		"/v2/team/../x/manifests/v1", "/v2/team%2Fapp/manifests/v1", "/v2//manifests/", "/v2/app/blobs/sha256:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		api := ParsePath(path)
		if api.Repository == "" {
			if api.Kind != KindBase && api.Kind != KindCatalog && api.Kind != KindOther {
				t.Fatalf("%q: kind %s without a repository", path, api.Kind)
			}
			return
		}
		if !ValidName(api.Repository) || len(api.Repository) > MaxNameLen {
			t.Fatalf("%q: repository %q outside the grammar", path, api.Repository)
		}
		if got := rebuild(api); got != path && !(api.Kind == KindUpload && api.Reference == "" && got == path+"/") {
			t.Fatalf("%q parsed as %+v, which is the path %q", path, api, got)
		}
	})
}

// rebuild is the path of an API value.
func rebuild(a API) string {
	base := "/v2/" + a.Repository
	switch a.Kind {
	case KindManifest:
		return base + "/manifests/" + a.Reference
	case KindBlob:
		return base + "/blobs/" + a.Digest
	case KindTags:
		return base + "/tags/list"
	case KindReferrers:
		return base + "/referrers/" + a.Digest
	case KindUpload:
		return base + "/blobs/uploads/" + a.Reference
	}
	return strings.Repeat("?", 1)
}
