// Package httpcache is the HTTP side of the registry cache
// (routes[].http.cache): a link of the route's HTTP chain, an
// http.Handler that wraps the next link (the bridge's proxy) and reaches
// the registry for its own requests through the http.RoundTripper it is
// given. Blobs and manifests by digest are served from a Store once the
// registry has answered HEAD for the same path with the node's own
// headers with 2xx, or filled from the registry, one fetch per digest;
// manifests by tag always go to the registry, and their answer fills the
// by-digest entry when its Docker-Content-Digest is the body's. With
// Offline, when no upstream answers, cached content is served without
// asking, each such request logged and audited "offline".
//
// It imports no other link and no store: it reads the OCI vocabulary
// (package oci), reports the audit record's facts in the request's
// oci.Annotation, and speaks to the store through its own Store and
// Entry interfaces, so that another store (an object store shared by
// gateways) can take regcache's place.
//
// Usage:
//
//	c, err := httpcache.New(httpcache.Config{Route: "registry", Store: store, Offline: false, Log: log})
//	h := c.Wrap(next, upstream) // next: the proxy; upstream: the route's RoundTripper
package httpcache
