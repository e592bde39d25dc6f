package nodeconfig

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrSymlink is the error of Write and ReadDir for a symbolic link below
// the output directory where a directory or a data file goes.
var ErrSymlink = errors.New("is a symbolic link: node-config follows no link under its output directory; remove it (or use another --out) and run node-config again")

// belowDir is a directory below the output directory, opened without
// following a symbolic link on the way; every operation is relative to
// its descriptor, so a link planted after the walk is not followed either.
type belowDir struct {
	fd   int
	path string // for errors
}

// splitBelow splits the slash-separated p of a File into its directory
// components and its name, refusing anything that leaves the directory.
func splitBelow(p string) ([]string, string, error) {
	clean := path.Clean(p)
	if clean != p || path.IsAbs(p) || clean == "." || strings.HasPrefix(clean, "../") || clean == ".." {
		return nil, "", fmt.Errorf("file path %q: want a clean relative path", p)
	}
	parts := strings.Split(clean, "/")
	return parts[:len(parts)-1], parts[len(parts)-1], nil
}

// openBelow opens dir (which may itself be a link, as /etc/containerd
// may be), then each of parts below it with O_NOFOLLOW, creating missing
// ones (mode 0755) when create is set.
func openBelow(dir string, parts []string, create bool) (*belowDir, error) {
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := &belowDir{fd: fd, path: dir}
	for _, p := range parts {
		next, err := d.sub(p, create)
		d.close()
		if err != nil {
			return nil, err
		}
		d = next
	}
	return d, nil
}

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// sub opens the directory name in d, never through a link.
func (d *belowDir) sub(name string, create bool) (*belowDir, error) {
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, dirFlags, 0)
	if errors.Is(err, unix.ENOENT) && create {
		if err = unix.Mkdirat(d.fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
			fd, err = unix.Openat(d.fd, name, dirFlags, 0)
		}
	}
	if err != nil {
		if d.isLink(name) {
			return nil, fmt.Errorf("%s %w", p, ErrSymlink)
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return &belowDir{fd: fd, path: p}, nil
}

func (d *belowDir) close() { _ = unix.Close(d.fd) }

// isLink tells whether name in d is a symbolic link.
func (d *belowDir) isLink(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// refuseLink fails when name in d is a symbolic link.
func (d *belowDir) refuseLink(name string) error {
	if d.isLink(name) {
		return fmt.Errorf("%s %w", filepath.Join(d.path, name), ErrSymlink)
	}
	return nil
}

func (d *belowDir) remove(name string) { _ = unix.Unlinkat(d.fd, name, 0) }

func (d *belowDir) symlink(target, name string) error {
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return &fs.PathError{Op: "symlink", Path: filepath.Join(d.path, name), Err: err}
	}
	return nil
}

// create writes data to the new file name (O_EXCL: never an existing one,
// never through a link).
func (d *belowDir) create(name string, data []byte, mode fs.FileMode) error {
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(mode.Perm()))
	if err != nil {
		return &fs.PathError{Op: "create", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *belowDir) rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &fs.PathError{Op: "rename", Path: filepath.Join(d.path, to), Err: err}
	}
	return nil
}

// read returns the contents of name in d, refusing a link.
func (d *belowDir) read(name string) ([]byte, error) {
	p := filepath.Join(d.path, name)
	fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if d.isLink(name) {
			return nil, fmt.Errorf("%s %w", p, ErrSymlink)
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return io.ReadAll(f)
}
