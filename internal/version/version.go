// Package version reports the joulemark build: the module version when built
// from a tagged module, else the VCS revision embedded by the Go toolchain.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time (-ldflags "-X .../version.Version=v1.2.3").
var Version = ""

// String is the human-readable version line.
func String() string {
	v, rev, dirty := Info()
	s := "joulemark " + v
	if rev != "" {
		s += " (" + rev
		if dirty {
			s += ", dirty"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Info returns the version, the VCS revision and whether the tree was dirty.
func Info() (version, revision string, dirty bool) {
	version = Version
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if version == "" {
		version = "devel"
	}
	return version, revision, dirty
}
