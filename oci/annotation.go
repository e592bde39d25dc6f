package oci

import (
	"context"
	"net/http"
	"sync"
)

// Annotation carries what the links of one request's chain learn for its
// audit record: the cache's word, the upstream that answered, the
// response's digest, the first failure. The first link (the bridge's
// policy) creates it with the parsed API path and puts it on the
// request's context; the others reach it with AnnotationFrom. Its
// methods are safe for concurrent use and nil-safe: a request without
// one (a link tested alone) records nothing.
type Annotation struct {
	api API

	mu       sync.Mutex
	cache    string // "hit", "miss", "bypass", "offline"; "": not a cache answer
	sig      string // "verified", "unsigned", "invalid", "skipped", "error"; "": no signature policy
	upstream string // the address of the upstream that answered
	digest   string // the response's Docker-Content-Digest
	err      error  // the first failure
	aborted  bool   // the upstream failed mid-body
	bodyErr  error  // reading the node's request body failed (its fault)
}

// Facts is what an Annotation holds at the end of its request.
type Facts struct {
	Cache     string
	Signature string // the signature policy's result; "": none decided
	Upstream  string
	Digest    string
	Err       error
	Aborted   bool // Err is the upstream's, mid-body: the node's connection ends as aborted by the upstream
}

type annotationKey struct{}

// NewAnnotation returns the annotation of a request whose path parsed as
// api.
func NewAnnotation(api API) *Annotation { return &Annotation{api: api} }

// WithAnnotation returns ctx carrying a.
func WithAnnotation(ctx context.Context, a *Annotation) context.Context {
	return context.WithValue(ctx, annotationKey{}, a)
}

// AnnotationFrom is the annotation ctx carries, or nil.
func AnnotationFrom(ctx context.Context) *Annotation {
	a, _ := ctx.Value(annotationKey{}).(*Annotation)
	return a
}

// RequestAPI is r's API path: the one its annotation was created with
// (parsed once, by the first link), else ParseURL of r's URL.
func RequestAPI(r *http.Request) API {
	if a := AnnotationFrom(r.Context()); a != nil {
		return a.api
	}
	return ParseURL(r.URL)
}

// API is the parsed path the annotation was created with; the zero API
// for a nil one.
func (a *Annotation) API() API {
	if a == nil {
		return API{}
	}
	return a.api
}

// SetCache records the cache's word for the request: "hit", "miss",
// "bypass" or "offline".
func (a *Annotation) SetCache(word string) {
	a.set(func() { a.cache = word })
}

// SetSignature records the signature policy's result for the request:
// "verified", "unsigned", "invalid", "skipped" or "error".
func (a *Annotation) SetSignature(result string) {
	a.set(func() { a.sig = result })
}

// SetUpstream records the address of the upstream that answered.
func (a *Annotation) SetUpstream(addr string) {
	a.set(func() { a.upstream = addr })
}

// SetDigest records the digest of the answer (its Docker-Content-Digest).
func (a *Annotation) SetDigest(d string) {
	a.set(func() { a.digest = d })
}

// Fail records err unless an earlier failure is already recorded;
// upstream marks a failure of the upstream mid-body.
func (a *Annotation) Fail(err error, upstream bool) {
	a.set(func() {
		if a.err == nil {
			a.err, a.aborted = err, upstream
		}
	})
}

// FailBody records a failure reading the node's request body: the
// request's failure (Fail), and the reason its answer is 400.
func (a *Annotation) FailBody(err error) {
	a.set(func() {
		if a.bodyErr == nil {
			a.bodyErr = err
		}
		if a.err == nil {
			a.err, a.aborted = err, false
		}
	})
}

// BodyErr is the failure reading the node's request body, or nil.
func (a *Annotation) BodyErr() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bodyErr
}

// Facts returns what is recorded; the zero Facts for a nil annotation.
func (a *Annotation) Facts() Facts {
	if a == nil {
		return Facts{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return Facts{Cache: a.cache, Signature: a.sig, Upstream: a.upstream, Digest: a.digest, Err: a.err, Aborted: a.aborted}
}

func (a *Annotation) set(f func()) {
	if a == nil {
		return
	}
	a.mu.Lock()
	f()
	a.mu.Unlock()
}
