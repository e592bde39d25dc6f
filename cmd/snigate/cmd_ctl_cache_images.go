package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/snigate/snigate/images"
	"github.com/snigate/snigate/internal/admin"
)

// newCtlCacheImageCmds are `snigate ctl cache warm|status|export|import`.
func newCtlCacheImageCmds(a *app, o *ctlOptions) []*cobra.Command {
	return []*cobra.Command{newCtlCacheWarmCmd(a, o), newCtlCacheStatusCmd(a, o), newCtlCacheExportCmd(a, o), newCtlCacheImportCmd(a, o)}
}

func newCtlCacheWarmCmd(a *app, o *ctlOptions) *cobra.Command {
	var platforms []string
	cmd := &cobra.Command{
		Use:   "warm REF...",
		Short: "Fetch images (all their platforms) into the caches now",
		Long: `Fetch each image REF (host/repository:tag or host/repository@sha256:...,
whose host is a name a route with http.cache serves) into that route's cache
now, through the route's own upstream path: the index, every platform's
manifest (or those of --platform), configs and layers. A progress bar on a
terminal (bytes, layers, rate), a line per layer otherwise. Exits 0 only
when every image is complete in the cache.`,
		Example: `  snigate ctl cache warm registry.example.com/team/app:v1.2
  snigate ctl cache warm --platform linux/amd64 registry.example.com/base/debian:12`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var report func(images.Progress)
			pw := &admin.ProgressWriter{W: a.stdout, Terminal: isTerminal(a.stdout)}
			if o.output != outputJSON {
				report = pw.Report
			}
			st, err := o.client().WarmImages(cmd.Context(), args, platforms, report)
			pw.End()
			if err != nil {
				return failed(err)
			}
			return imagesOutcome(o.write(a.stdout, st, func(w io.Writer) error { return admin.WriteImageTable(w, st) }), st)
		},
	}
	cmd.Flags().StringSliceVar(&platforms, "platform", nil, "only these platforms of an index (os/arch[/variant]; repeat or comma-separate)")
	return cmd
}

func newCtlCacheStatusCmd(a *app, o *ctlOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status [REF...]",
		Short: "Say whether the caches hold all of each image, and what is missing",
		Long: `For each image REF, whether its route's cache holds all of it (every
platform's manifest, configs and layers): "complete", or "incomplete" and
the missing digests. A tag is resolved by the registry when it answers, else
by the cache's memory of it (cache.tags). Without REF: the pinned images
(cache.pin) of every route, with the progress of a fetch going on. Exits 0
only when every image is complete.`,
		Example: `  snigate ctl cache status registry.example.com/team/app:v1.2
  snigate ctl cache status`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := o.client().ImageStatus(cmd.Context(), args)
			if err != nil {
				return failed(err)
			}
			return imagesOutcome(o.write(a.stdout, st, func(w io.Writer) error { return admin.WriteImageTable(w, st) }), st)
		},
	}
}

func newCtlCacheExportCmd(a *app, o *ctlOptions) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "export REF... --out DIR",
		Short: "Write an OCI image layout of images from the caches",
		Long: `Write the images REF (every platform) from the caches into DIR as an OCI
image layout (oci-layout, index.json naming each image by its full
reference, blobs/sha256/...), to carry on a disk. DIR is on the gateway's
host (the gateway writes it); it must be new or empty, unless --force.
Every image must be complete in the cache (snigate ctl cache warm first).`,
		Example: `  snigate ctl cache export registry.example.com/team/app:v1.2 --out /mnt/disk/images`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError("export: give --out DIR", cmd)
			}
			dir, err := filepath.Abs(out)
			if err != nil {
				return failed(err)
			}
			res, err := o.client().ExportImages(cmd.Context(), args, dir, force)
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, res, func(w io.Writer) error { return writeLayoutResult(w, "exported to", res) })
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the directory of the layout (on the gateway's host)")
	cmd.Flags().BoolVar(&force, "force", false, "write into a directory that is not empty")
	return cmd
}

func newCtlCacheImportCmd(a *app, o *ctlOptions) *cobra.Command {
	var repository string
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Load an OCI image layout into the caches",
		Long: `Load the OCI image layout in DIR (on the gateway's host) into the caches of
the routes its images name (org.opencontainers.image.ref.name as
host/repository:tag; --repository host/repository for names that are a tag
alone, as skopeo writes them). Every manifest and blob is verified first: a
missing blob or one that does not match its digest refuses the whole
layout, naming it, and nothing is imported. The images' tags count as
confirmed by the registry now (cache.tags).`,
		Example: `  snigate ctl cache import /mnt/disk/images
  snigate ctl cache import --repository registry.example.com/team/app /mnt/disk/app`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return failed(err)
			}
			res, err := o.client().ImportImages(cmd.Context(), dir, repository)
			if err != nil {
				return failed(err)
			}
			return o.write(a.stdout, res, func(w io.Writer) error { return writeLayoutResult(w, "imported from", res) })
		},
	}
	cmd.Flags().StringVar(&repository, "repository", "", "host/repository of images named by a tag alone")
	return cmd
}

// imagesOutcome is err, else a failure when an image is not complete.
func imagesOutcome(err error, st []images.Status) error {
	if err != nil {
		return err
	}
	n := 0
	for _, s := range st {
		if !s.Complete {
			n++
		}
	}
	if n > 0 {
		return &exitError{status: exitRuntime, err: fmt.Errorf("%d of %d images incomplete in the cache", n, len(st))}
	}
	return nil
}

// writeLayoutResult prints an export's or an import's result.
func writeLayoutResult(w io.Writer, verb string, res images.LayoutResult) error {
	if _, err := fmt.Fprintf(w, "%d images, %d blobs, %d bytes %s %s\n", len(res.Images), res.Blobs, res.Bytes, verb, res.Dir); err != nil {
		return err
	}
	return admin.WriteImageTable(w, res.Images)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
