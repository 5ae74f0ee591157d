// Package version is Skulk's one source of its own version and commit: the
// CLI's `skulk version`, the node's start log, its membership meta,
// /api/version and /v1/diagnostics/cluster all read it here.
package version

import (
	"runtime/debug"
	"sync"
)

// Base is the release this tree is on; a build of a tagged module version
// (go install …@vX.Y.Z) reports that version instead.
const Base = "0.1.0-dev"

// Info is the version and commit of this build.
type Info struct {
	Version string `json:"version"`
	Commit  string `json:"commit"` // VCS revision (12 hex digits, "+dirty" when modified), or "unknown"
}

func (i Info) String() string { return i.Version + " (commit " + i.Commit + ")" }

// Stamped by a build that has no VCS information (GOFLAGS=-buildvcs=false,
// a git worktree, a source tarball):
//
//	go build -ldflags "-X github.com/skulk/skulk/internal/platform/version.stampedCommit=$(git rev-parse --short=12 HEAD)" ./cmd/skulk
var stampedVersion, stampedCommit string

var get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	info := fromBuildInfo(bi)
	if stampedVersion != "" {
		info.Version = stampedVersion
	}
	if stampedCommit != "" {
		info.Commit = stampedCommit
	}
	return info
})

// Get reports this binary's version and commit, from the build's VCS
// information (go build in a git checkout records it; go test does not).
func Get() Info { return get() }

// Version and Commit are Get's fields.
func Version() string { return get().Version }
func Commit() string  { return get().Commit }

func fromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: Base, Commit: "unknown"}
	if bi == nil {
		return info
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
			if len(info.Commit) > 12 {
				info.Commit = info.Commit[:12]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && info.Commit != "unknown" {
		info.Commit += "+dirty"
	}
	return info
}
