// Package httpcache is the HTTP side of the registry cache
// (routes[].http.cache): it implements httpbridge.Cache over a
// content-addressed store (package regcache). Blobs and manifests by
// digest are served from the store once the registry has answered HEAD
// for the same path with the node's own headers with 2xx, or filled from
// the registry through the route's upstream client, one fetch per digest;
// manifests by tag always go to the registry, and their answer fills the
// by-digest entry when its Docker-Content-Digest is the body's. With
// Offline, when no upstream answers, cached content is served without
// asking, each such request logged and audited "offline".
//
// The store is behind the small interface Store, so that another one
// (an object store shared by gateways) could take regcache's place.
package httpcache
