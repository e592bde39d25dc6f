package main

import (
	"context"
	"fmt"
	"io"

	"github.com/snigate/snigate/internal/admin"
)

// ctlCache runs `snigate ctl cache` (the http routes' caches: size,
// entries, hit ratio) and `snigate ctl cache purge [DIGEST]` (remove one
// digest, or everything, from every cache).
func ctlCache(ctx context.Context, c *admin.Client, args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) == 0:
		st, e := c.Caches(ctx)
		if err = e; err == nil {
			err = admin.WriteCacheTable(stdout, st)
		}
	case args[0] == "purge" && len(args) <= 2:
		digest := ""
		if len(args) == 2 {
			digest = args[1]
		}
		st, e := c.PurgeCache(ctx, digest)
		if err = e; err == nil {
			err = admin.WriteCacheTable(stdout, st)
		}
	default:
		fmt.Fprintf(stderr, "snigate ctl cache: want no argument, or \"purge [DIGEST]\"\n%s", usage)
		return exitUsage
	}
	if err != nil {
		return failure(stderr, "ctl cache", err)
	}
	return exitOK
}
