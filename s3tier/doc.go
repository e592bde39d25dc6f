// Package s3tier is the cache tier that several gateways share: blobs and
// manifests by digest in an S3-compatible bucket (SeaweedFS, MinIO, Ceph
// RGW, AWS S3), under the route's http.cache.shared.
//
// A *Tier talks to the bucket (reads verified against their digest,
// uploads completed only once verified, leases that give one registry
// fetch per digest to the whole fleet); Tiered composes the route's local
// store and a Tier into one httpcache.Store, so the cache link needs no
// change:
//
//	t, err := s3tier.New(s3tier.Config{Route: "registry", Endpoint: "https://s3.internal:8333",
//		Bucket: "snigate-cache", AccessKeyFile: ak, SecretKeyFile: sk, Metrics: m})
//	store := &s3tier.Tiered{Local: local, Shared: t}
//	hc, err := httpcache.New(httpcache.Config{Route: "registry", Store: store})
//	...
//	t.Close() // waits for the uploads and lease heartbeats it started
package s3tier
