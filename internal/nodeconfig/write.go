package nodeconfig

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

// Write puts files under dir: each one is written to a temporary file
// beside it and renamed into place, so a reader never sees half a file;
// a link replaces what was there.
func Write(dir string, files []File) error {
	for _, f := range files {
		if err := writeOne(filepath.Join(dir, filepath.FromSlash(f.Path)), f); err != nil {
			return err
		}
	}
	return nil
}

func writeOne(p string, f File) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	tmp := p + ".snigate-tmp"
	_ = os.Remove(tmp)
	var err error
	if f.Link != "" {
		err = os.Symlink(f.Link, tmp)
	} else {
		err = os.WriteFile(tmp, f.Data, f.Mode)
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// WriteSummary prints what was written under dir and where each file goes
// on a node.
func WriteSummary(w io.Writer, dir string, files []File) error {
	fmt.Fprintf(w, "snigate node-config: wrote %d files under %s; copy each to its place on every node:\n\n", len(files), dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tON THE NODE\tNOTE")
	for _, f := range files {
		what := f.Note
		if f.Link != "" {
			what = "link to " + f.Link + ": " + what
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", filepath.Join(dir, filepath.FromSlash(f.Path)), f.Dest, what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nThe certs.d tree can be copied as it is (paths in hosts.toml are relative to its directory):\n"+
		"  cp -r %s/. <certs.d of the runtime>/   or test it first: ctr images pull --hosts-dir %s IMAGE\n"+
		"Then, on the node: snigate doctor NAME\n", filepath.Join(dir, "certs.d"), filepath.Join(dir, "certs.d"))
	return err
}
