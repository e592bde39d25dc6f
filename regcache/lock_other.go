//go:build !unix

package regcache

import "os"

// lockDir opens path; without flock a second Cache on the same directory
// is not detected here.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
