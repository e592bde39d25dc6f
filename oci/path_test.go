package oci

import (
	"net/http"
	"strings"
	"testing"
)

const (
	dgst  = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	dgst5 = "sha512:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		name, path string
		want       API
	}{
		{name: "base", path: "/v2/", want: API{Kind: KindBase}},
		{name: "base without slash", path: "/v2", want: API{Kind: KindBase}},
		{name: "catalog", path: "/v2/_catalog", want: API{Kind: KindCatalog}},
		{name: "manifest by tag", path: "/v2/team/app/manifests/v1.2", want: API{Kind: KindManifest, Repository: "team/app", Reference: "v1.2"}},
		{name: "manifest by digest", path: "/v2/team/app/manifests/" + dgst, want: API{Kind: KindManifest, Repository: "team/app", Reference: dgst, Digest: dgst}},
		{name: "one-segment name", path: "/v2/app/manifests/latest", want: API{Kind: KindManifest, Repository: "app", Reference: "latest"}},
		{name: "deep name", path: "/v2/a/b/c/d/blobs/" + dgst, want: API{Kind: KindBlob, Repository: "a/b/c/d", Digest: dgst}},
		{name: "sha512 blob", path: "/v2/app/blobs/" + dgst5, want: API{Kind: KindBlob, Repository: "app", Digest: dgst5}},
		{name: "other algorithm", path: "/v2/app/blobs/multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8", want: API{Kind: KindBlob, Repository: "app", Digest: "multihash+base58:QmRZxt2b1FVZPNqd8hsiykDL3TdBDeTSPX9Kv46HmX4Gx8"}},
		{name: "name with endpoint words", path: "/v2/a/manifests/manifests/v1", want: API{Kind: KindManifest, Repository: "a/manifests", Reference: "v1"}},
		{name: "name separators", path: "/v2/my-org/app_x__y.z--w/tags/list", want: API{Kind: KindTags, Repository: "my-org/app_x__y.z--w"}},
		{name: "referrers", path: "/v2/team/app/referrers/" + dgst, want: API{Kind: KindReferrers, Repository: "team/app", Digest: dgst}},
		{name: "upload start", path: "/v2/team/app/blobs/uploads/", want: API{Kind: KindUpload, Repository: "team/app"}},
		{name: "upload start without slash", path: "/v2/team/app/blobs/uploads", want: API{Kind: KindUpload, Repository: "team/app"}},
		{name: "upload session", path: "/v2/team/app/blobs/uploads/3f1c-ab_9=", want: API{Kind: KindUpload, Repository: "team/app", Reference: "3f1c-ab_9="}},
		{name: "upper-case name", path: "/v2/Team/app/manifests/v1", want: API{Kind: KindOther}},
		{name: "dot-dot segment", path: "/v2/team/../other/manifests/v1", want: API{Kind: KindOther}},
		{name: "empty segment", path: "/v2/team//app/manifests/v1", want: API{Kind: KindOther}},
		{name: "percent-encoded slash", path: "/v2/team%2Fapp/manifests/v1", want: API{Kind: KindOther}},
		{name: "bad tag", path: "/v2/app/manifests/-v1", want: API{Kind: KindOther}},
		{name: "tag too long", path: "/v2/app/manifests/" + strings.Repeat("a", 129), want: API{Kind: KindOther}},
		{name: "short sha256", path: "/v2/app/blobs/sha256:abc", want: API{Kind: KindOther}},
		{name: "upper-case hex", path: "/v2/app/blobs/" + strings.ToUpper(dgst), want: API{Kind: KindOther}},
		{name: "name too long", path: "/v2/" + strings.Repeat("a/", 128) + "a/manifests/v1", want: API{Kind: KindOther}},
		{name: "tags without list", path: "/v2/app/tags/", want: API{Kind: KindOther}},
		{name: "not the API", path: "/token", want: API{Kind: KindOther}},
		{name: "v1 API", path: "/v1/_ping", want: API{Kind: KindOther}},
		{name: "no name", path: "/v2/manifests/v1", want: API{Kind: KindOther}},
		{name: "separator at the end", path: "/v2/app-/manifests/v1", want: API{Kind: KindOther}},
		{name: "triple underscore", path: "/v2/a___b/manifests/v1", want: API{Kind: KindOther}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParsePath(tt.path); got != tt.want {
				t.Errorf("ParsePath(%q) = %+v, want %+v", tt.path, got, tt.want)
			}
		})
	}
}

func TestParseURLMount(t *testing.T) {
	tests := []struct {
		name, url string
		want      API
	}{
		{name: "mount", url: "/v2/team/app/blobs/uploads/?mount=" + dgst + "&from=secret/x",
			want: API{Kind: KindUpload, Repository: "team/app", From: "secret/x", Mount: dgst}},
		{name: "upload without query", url: "/v2/team/app/blobs/uploads/", want: API{Kind: KindUpload, Repository: "team/app"}},
		{name: "from on a session", url: "/v2/team/app/blobs/uploads/abc?from=secret/x",
			want: API{Kind: KindUpload, Repository: "team/app", Reference: "abc", From: "secret/x"}},
		{name: "empty from", url: "/v2/team/app/blobs/uploads/?mount=" + dgst + "&from=", want: API{Kind: KindOther}},
		{name: "malformed mount", url: "/v2/team/app/blobs/uploads/?mount=sha256:x&from=team/b", want: API{Kind: KindOther}},
		{name: "semicolon query", url: "/v2/team/app/blobs/uploads/?mount=" + dgst + ";from=secret/x", want: API{Kind: KindOther}},
		{name: "from on a manifest is not an upload's", url: "/v2/team/app/manifests/v1?from=secret/x",
			want: API{Kind: KindManifest, Repository: "team/app", Reference: "v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", "https://registry.example.com"+tt.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := ParseURL(req.URL); got != tt.want {
				t.Errorf("ParseURL(%s) = %+v, want %+v", tt.url, got, tt.want)
			}
		})
	}
}
