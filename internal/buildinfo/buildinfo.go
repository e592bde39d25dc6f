package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped at link time with -ldflags "-X ...". Empty: not stamped.
var (
	version string // release version, such as "v0.2.0"
	commit  string // full VCS revision
	date    string // build date, RFC 3339 in UTC
)

// Placeholders for what a build does not record.
const (
	UnknownVersion = "(devel)"
	Unknown        = "unknown"
)

// Info describes one build. Every field is set: what the build does not
// record is UnknownVersion (Version) or Unknown (Commit, Date).
type Info struct {
	Version   string `json:"version"`    // "v0.2.0", or UnknownVersion
	Commit    string `json:"commit"`     // VCS revision, or Unknown
	Date      string `json:"build_date"` // RFC 3339, or Unknown
	GoVersion string `json:"go_version"` // "go1.26.8"
	Platform  string `json:"platform"`   // GOOS/GOARCH, "linux/amd64"
}

// stamp is what the linker set.
type stamp struct{ version, commit, date string }

// Get returns the running binary's build information.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	return resolve(stamp{version, commit, date}, bi, ok)
}

// resolve combines the link-time stamp s with the toolchain's record bi
// (valid when ok); the stamp wins.
func resolve(s stamp, bi *debug.BuildInfo, ok bool) Info {
	info := Info{Version: UnknownVersion, Commit: Unknown, Date: Unknown,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if ok && bi != nil {
		fromToolchain(&info, bi)
	}
	info.Version = first(s.version, info.Version)
	info.Commit = first(s.commit, info.Commit)
	info.Date = first(s.date, info.Date)
	return info
}

// fromToolchain fills info from what `go build` recorded.
func fromToolchain(info *Info, bi *debug.BuildInfo) {
	if v := bi.Main.Version; v != "" {
		info.Version = v
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch {
		case s.Value == "":
		case s.Key == "vcs.revision":
			info.Commit = s.Value
		case s.Key == "vcs.time":
			info.Date = s.Value
		}
	}
}

// first returns s, or def when s is empty.
func first(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// String is the text of `snigate version`: the first line is
// "snigate VERSION", the lines after it one "key: value" each.
func (i Info) String() string {
	return fmt.Sprintf("snigate %s\n  commit:   %s\n  built:    %s\n  go:       %s\n  platform: %s\n",
		i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
