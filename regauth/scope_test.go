package regauth

import (
	"net/http/httptest"
	"testing"
)

func TestRepositoryOf(t *testing.T) {
	tests := []struct {
		name, path, repo string
		ok               bool
	}{
		{name: "manifest by tag", path: "/v2/library/alpine/manifests/3.20", repo: "library/alpine", ok: true},
		{name: "blob", path: "/v2/a/b/c/blobs/sha256:abc", repo: "a/b/c", ok: true},
		{name: "upload start", path: "/v2/a/blobs/uploads/", repo: "a", ok: true},
		{name: "upload session", path: "/v2/a/blobs/uploads/1234-uuid", repo: "a", ok: true},
		{name: "repository named blobs", path: "/v2/x/blobs/blobs/uploads/", repo: "x/blobs", ok: true},
		{name: "tags", path: "/v2/a/b/tags/list", repo: "a/b", ok: true},
		{name: "referrers", path: "/v2/a/referrers/sha256:abc", repo: "a", ok: true},
		{name: "base", path: "/v2/", ok: false},
		{name: "catalog", path: "/v2/_catalog", ok: false},
		{name: "no repository", path: "/v2/manifests/x", ok: false},
		{name: "empty component", path: "/v2/a//b/manifests/x", ok: false},
		{name: "empty reference", path: "/v2/a/manifests/", ok: false},
		{name: "not the API", path: "/token", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, ok := RepositoryOf(tt.path)
			if repo != tt.repo || ok != tt.ok {
				t.Errorf("RepositoryOf(%q) = %q, %v; want %q, %v", tt.path, repo, ok, tt.repo, tt.ok)
			}
		})
	}
}

func TestRequestScope(t *testing.T) {
	tests := []struct {
		name, method, path string
		write              bool
		want               string
	}{
		{name: "pull", method: "GET", path: "/v2/a/manifests/latest", want: "repository:a:pull"},
		{name: "head", method: "HEAD", path: "/v2/a/blobs/sha256:00", want: "repository:a:pull"},
		{name: "push allowed", method: "POST", path: "/v2/a/blobs/uploads/", write: true, want: "repository:a:pull,push"},
		{name: "push not allowed asks pull only", method: "PUT", path: "/v2/a/manifests/t", want: "repository:a:pull"},
		{name: "delete allowed", method: "DELETE", path: "/v2/a/manifests/sha256:00", write: true, want: "repository:a:delete"},
		{name: "delete not allowed", method: "DELETE", path: "/v2/a/manifests/sha256:00", want: "repository:a:pull"},
		{name: "base has no scope", method: "GET", path: "/v2/", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "https://reg"+tt.path, nil)
			repo, _ := RepositoryOf(r.URL.Path)
			if got := requestScope(r, repo, tt.write); got != tt.want {
				t.Errorf("requestScope = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGrantScope(t *testing.T) {
	tests := []struct {
		name, method, target, challenged string
		write                            bool
		want                             string
	}{
		{name: "exactly the challenged scope", method: "GET", target: "/v2/a/manifests/t", challenged: "repository:a:pull", want: "repository:a:pull"},
		{name: "push cut to pull when writing is not allowed", method: "GET", target: "/v2/a/manifests/t", challenged: "repository:a:pull,push", want: "repository:a:pull"},
		{name: "push kept when allowed", method: "POST", target: "/v2/a/blobs/uploads/", challenged: "repository:a:push,pull", write: true, want: "repository:a:pull,push"},
		{name: "wildcard is not delete", method: "PUT", target: "/v2/a/manifests/t", challenged: "repository:a:*", write: true, want: "repository:a:pull,push"},
		{name: "another repository is dropped", method: "GET", target: "/v2/a/manifests/t", challenged: "repository:secret:pull", want: "repository:a:pull"},
		{name: "mount source read only", method: "POST", target: "/v2/a/blobs/uploads/?mount=sha256:00&from=b", challenged: "repository:a:pull,push repository:b:pull,push", write: true,
			want: "repository:a:pull,push repository:b:pull"},
		{name: "mount source first does not narrow the target", method: "POST", target: "/v2/a/blobs/uploads/?from=b", challenged: "repository:b:pull repository:a:pull,push", write: true,
			want: "repository:a:pull,push repository:b:pull"},
		{name: "registry scopes dropped", method: "GET", target: "/v2/a/tags/list", challenged: "registry:catalog:*", want: "repository:a:pull"},
		{name: "name with a port", method: "GET", target: "/v2/a/manifests/t", challenged: "repository:a:pull extra:junk", want: "repository:a:pull"},
		{name: "base", method: "GET", target: "/v2/", challenged: "repository:a:pull", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "https://reg"+tt.target, nil)
			repo, _ := RepositoryOf(r.URL.Path)
			if got := grantScope(tt.challenged, r, repo, tt.write); got != tt.want {
				t.Errorf("grantScope(%q) = %q, want %q", tt.challenged, got, tt.want)
			}
		})
	}
}
