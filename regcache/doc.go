// Package regcache is snigate's content-addressed store for registry
// content: blobs and manifests by digest, in one directory per route
// (routes[].http.cache), for the HTTP bridge to serve from.
//
// Usage (the bridge, per request for a digest; see Example_cache):
//
//	cache, err := regcache.Open(regcache.Config{
//		Route: "registry", Dir: "/var/cache/snigate/registry", MaxSize: 50 << 30,
//		Logger: logger, Metrics: metrics, // regcache.NewMetrics(reg), once per process
//	})
//	defer cache.Close()
//
//	e, hit := cache.Get(ctx, digest) // verified stored content, or false
//	if !hit {
//		e, err = cache.Fill(ctx, digest, fetch) // one fetch per digest; others join it
//	}
//	if errors.Is(err, regcache.ErrBypass) {
//		// the cache cannot help (disk full, unwritable, I/O error): serve from upstream
//	}
//	defer e.Close()
//	http.ServeContent(w, r, "", time.Time{}, e) // Range included; a fill's reads follow its bytes
//	cache.CountRequest(regcache.Hit)            // or Miss, Bypass, Offline
//
// Guarantees: bytes whose hash does not match their digest are never
// served (a fill is hashed as it arrives and its readers see the end only
// once it matched; a stored file is hashed again before its first serve
// after Open and whenever its size, mtime, ctime or inode changed); a
// digest is fetched once however many callers ask at the same moment,
// and the joiners read the same file as it grows (no copy in memory per
// reader); a fill is stored under its final name only when complete and
// verified, so a crash leaves nothing that is served; least recently
// used content is removed beyond MaxSize without breaking readers that
// have it open, and fills in flight count against it too: one that does
// not fit is served to its readers from memory and not kept.
//
// Ownership: the caller owns the *Cache and closes it; every Entry from
// Get or Fill is the caller's to Close (an Entry stays readable after
// the Cache closed, unless it was reading a fill Close cut short). The
// Cache owns a fill's goroutine and waits for it in Close. One Cache per
// directory per process: on reload, keep the Cache of an unchanged
// cache.dir (SetMaxSize for a new max_size) instead of opening it again,
// which fails while the first is open.
package regcache
