//go:build !linux

package regcache

import "os"

// lastUse is when the file was written: the order of least recent use
// after a restart is the order of filling.
func lastUse(fi os.FileInfo) int64 { return fi.ModTime().UnixNano() }
