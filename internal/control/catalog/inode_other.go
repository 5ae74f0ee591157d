//go:build !unix

package catalog

import "io/fs"

// inodeOf is 0 where the platform has no inode; size and mtime still apply.
func inodeOf(fs.FileInfo) uint64 { return 0 }
