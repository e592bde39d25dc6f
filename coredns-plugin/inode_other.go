//go:build !unix

package snigate

import "os"

// inode is unknown here; size and modification time still detect changes.
func inode(os.FileInfo) uint64 { return 0 }
