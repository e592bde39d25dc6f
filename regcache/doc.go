// Package regcache is snigate's content-addressed store for registry
// content (blobs and manifests by digest).
package regcache
