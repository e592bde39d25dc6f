// Package images is the cache's idea of whole images, for air-gapped
// operation: warming images into a route's cache through the route's own
// chain (Warm), saying whether the cache holds all of an image (Check),
// keeping pinned images in it (Pinner), and carrying images out and in
// as an OCI image layout (Export, ReadLayout, Import).
//
// An image is a manifest (or an index and its platform manifests), its
// configs and its layers. This package reads them; it holds no bytes
// itself: the route's Store does, and the route's Fetcher (the HTTP
// chain: the cache link, then the proxy) fetches them, so that what a
// warm stores is exactly what a node's pull would have stored.
//
//	rt := images.Route{Name: "registry", Host: "registry.example.com", Fetch: bridge, Store: store}
//	ref, _ := oci.ParseReference("team/app:v1.2")
//	st := images.Warm(ctx, rt, "registry.example.com/team/app:v1.2", ref, images.WarmOptions{Progress: report})
//	if !st.Complete { ... st.Missing, st.Error ... }
package images
