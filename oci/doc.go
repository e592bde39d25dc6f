// Package oci is the vocabulary of the OCI distribution API that every
// link of the HTTP side (the bridge's policy and proxy, the cache) and the
// configuration share, so that a rule one of them applies is the rule
// every other one applies. It imports nothing of snigate's.
//
// It owns:
//   - the API path, parsed once into a typed value (path.go: ParseURL,
//     ParsePath, API, Kind), with a fuzz target;
//   - the repository grammar and allow-list patterns (repository.go:
//     ValidName, ValidDigest, ParseRepoPattern, RepoAllowList);
//   - the methods (methods.go: DefaultMethods, KnownMethods, CheckMethods);
//   - OCI error bodies and codes, and what a node is told of an upstream
//     failure (errors.go: WriteError, CodeDenied, ErrNoUpstream,
//     UpstreamStatus, NodeMessage);
//   - the hop-by-hop and forwarding header sets (headers.go);
//   - the manifest media types and their Accept header (media.go), and
//     the content descriptor (descriptor.go);
//   - the annotation on a request's context that carries the facts of its
//     audit record between the links of the chain (annotation.go:
//     NewAnnotation, WithAnnotation, AnnotationFrom, RequestAPI).
//
// Usage:
//
//	api := oci.ParseURL(r.URL)
//	if api.Kind == oci.KindBlob && !repos.Allows(api.Repository) {
//		oci.WriteError(w, http.StatusForbidden, oci.CodeDenied, "...")
//	}
package oci
