package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/s3tier"
)

func newCtlCacheCmd(a *app, o *ctlOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache [purge [DIGEST] | warm REF... | status [REF...] | export REF... --out DIR | import DIR]",
		Short: "The http routes' caches: size, entries, hit ratio; purge; warm, status, export and import images",
		Long: `Print each http route's cache (routes[].http.cache): its directory, size
against max_size, entries, hits, misses, bypasses and hit ratio, bytes fetched
from upstream to fill it; then, for routes with cache.shared, the shared tier
(endpoint, bucket and prefix, hits, misses, errors, bytes read and written,
the last error; GET /api/cache/shared). "purge DIGEST" removes one digest from every cache,
"purge" alone everything; a download in progress is not broken.
"warm", "status", "export" and "import" handle whole images for air-gapped
operation (see their help). -o json prints the API's answer as it is.`,
		Example: `  snigate ctl cache
  snigate ctl cache purge sha256:4c0b...
  snigate ctl cache purge
  snigate ctl cache -o json
  snigate ctl cache warm registry.example.com/team/app:v1.2
  snigate ctl cache status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := o.client().Caches(cmd.Context())
			if err != nil {
				return failed(err)
			}
			shared, err := o.client().SharedCaches(cmd.Context())
			if err != nil {
				shared = nil // an older snigate: no shared tier to show
			}
			return o.write(a.stdout, st, func(w io.Writer) error { return writeCacheTables(w, st, shared) })
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "purge [DIGEST]",
		Short: "Remove one digest, or everything, from every cache",
		Long: `Remove DIGEST (sha256:... or sha512:...) from the cache of every http
route, or, without DIGEST, everything they hold. Readers of a removed file
finish their download; the next request fetches it again from the registry.`,
		Example: `  snigate ctl cache purge sha256:4c0b...
  snigate ctl cache purge`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			digest := ""
			if len(args) == 1 {
				digest = args[0]
			}
			st, err := o.client().PurgeCache(cmd.Context(), digest)
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, st, func(w io.Writer) error { return admin.WriteCacheTable(w, st) })
		},
	})
	cmd.AddCommand(newCtlCacheImageCmds(a, o)...)
	return cmd
}

// writeCacheTables writes the local tiers' table, then the shared tiers'
// when a route has one.
func writeCacheTables(w io.Writer, st []regcache.Stats, shared []s3tier.Stats) error {
	if err := admin.WriteCacheTable(w, st); err != nil || len(shared) == 0 {
		return err
	}
	fmt.Fprintln(w)
	return admin.WriteSharedCacheTable(w, shared)
}
