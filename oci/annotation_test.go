package oci

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
)

// TestAnnotation: the first failure wins (a body failure counts as one
// and is kept apart), later facts overwrite, a nil annotation records
// nothing and does not panic, and RequestAPI reads the annotation's
// parsed path before the URL.
func TestAnnotation(t *testing.T) {
	first, second, body := errors.New("first"), errors.New("second"), errors.New("body")
	a := NewAnnotation(API{Kind: KindBlob, Repository: "team/app"})
	a.SetUpstream("10.0.0.1:443")
	a.SetUpstream("10.0.0.2:443")
	a.SetDigest("sha256:x")
	a.SetCache("miss")
	a.Fail(first, true)
	a.Fail(second, false)
	a.FailBody(body)
	f := a.Facts()
	if f.Upstream != "10.0.0.2:443" || f.Digest != "sha256:x" || f.Cache != "miss" || f.Err != first || !f.Aborted {
		t.Errorf("facts %+v", f)
	}
	if a.BodyErr() != body {
		t.Errorf("body error %v", a.BodyErr())
	}

	b := NewAnnotation(API{})
	b.FailBody(body)
	if f := b.Facts(); f.Err != body || f.Aborted {
		t.Errorf("a body failure first: %+v", f)
	}

	var none *Annotation
	none.SetCache("hit")
	none.Fail(first, true)
	none.FailBody(body)
	if none.Facts() != (Facts{}) || none.BodyErr() != nil || none.API() != (API{}) {
		t.Error("a nil annotation holds facts")
	}
	if AnnotationFrom(context.Background()) != nil {
		t.Error("an annotation from a bare context")
	}

	r := httptest.NewRequest("GET", "https://registry.example.com/v2/team/app/manifests/v1", nil)
	if got := RequestAPI(r); got.Kind != KindManifest || got.Reference != "v1" {
		t.Errorf("RequestAPI without an annotation: %+v", got)
	}
	r = r.WithContext(WithAnnotation(r.Context(), a))
	if got := RequestAPI(r); got != a.API() {
		t.Errorf("RequestAPI %+v, want the annotation's %+v", got, a.API())
	}
}
