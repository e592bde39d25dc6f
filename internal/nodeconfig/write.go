package nodeconfig

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
)

// Write puts files under dir: each one is written to a temporary file
// beside it and renamed into place, so a reader never sees half a file;
// a link replaces what was there. Nothing below dir is followed: a
// symbolic link where a directory or a data file goes is refused
// (ErrSymlink), so a link planted under dir cannot send a file elsewhere.
func Write(dir string, files []File) error {
	for _, f := range files {
		if err := writeOne(dir, f); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, filepath.FromSlash(f.Path)), err)
		}
	}
	return nil
}

func writeOne(dir string, f File) error {
	parent, name, err := splitBelow(f.Path)
	if err != nil {
		return err
	}
	d, err := openBelow(dir, parent, true)
	if err != nil {
		return err
	}
	defer d.close()
	if f.Link == "" {
		if err := d.refuseLink(name); err != nil {
			return err
		}
	}
	tmp := name + ".snigate-tmp"
	d.remove(tmp)
	if f.Link != "" {
		err = d.symlink(f.Link, tmp)
	} else {
		err = d.create(tmp, f.Data, f.Mode)
	}
	if err == nil {
		err = d.rename(tmp, name)
	}
	if err != nil {
		d.remove(tmp)
	}
	return err
}

// WriteSummary prints what was written under dir for runtime rt ("":
// containerd) and where each file goes on a node, then how to use the
// certs.d tree.
func WriteSummary(w io.Writer, dir string, rt Runtime, files []File) error {
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
	_, err := io.WriteString(w, "\n"+certsDUse(filepath.Join(dir, "certs.d"), Config{Runtime: rt}.runtime())+"Then, on the node: snigate doctor NAME\n")
	return err
}

// certsDUse says what the certs.d tree under certsD holds for rt and how
// to copy and try it.
func certsDUse(certsD string, rt Runtime) string {
	dest := certsDirs[rt]
	switch rt {
	case RuntimeDocker, RuntimePodman:
		try := "docker pull NAME/IMAGE (docker reads certs.d at each pull, no restart)"
		if rt == RuntimePodman {
			try = "skopeo inspect --cert-dir " + certsD + "/NAME docker://NAME/IMAGE"
		}
		return fmt.Sprintf("The certs.d tree is %s's layout: no hosts.toml (that is containerd's), a directory per registry with\n"+
			"%s (trusted for that registry only) and, for routes that require node identity, client.cert and client.key\n"+
			"links to the node's certificate. Copy it as it is:\n"+
			"  cp -a %s/. %s/   then try: %s\n", rt, CAFile, certsD, dest, try)
	}
	return fmt.Sprintf("The certs.d tree can be copied as it is (paths in hosts.toml are relative to its directory):\n"+
		"  cp -r %s/. %s/   or test it first: ctr images pull --hosts-dir %s IMAGE\n"+
		"(containerd reads certs.d only with config_path = \"%s\" in its config.toml)\n", certsD, dest, certsD, dest)
}
