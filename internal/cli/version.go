package cli

import (
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"runtime"
	"runtime/debug"
	"strings"
)

// versionText is what `parley --version` prints: the module version ("(devel)"
// for a build from a work tree), the commit it was built from with its time
// and whether the tree had changes (the vcs settings go build stamps unless
// -buildvcs=false), the Go release and platform, and the internal protocol
// and data format it speaks and reads (internal/compat). bi is
// debug.ReadBuildInfo's answer; ok false when it had none.
func versionText(bi *debug.BuildInfo, ok bool) string {
	version, commit, when, modified := "unknown", "unknown", "", false
	goVersion := runtime.Version()
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "parley %s\ncommit %s", version, commit)
	if when != "" {
		fmt.Fprintf(&b, " (%s)", when)
	}
	if modified {
		b.WriteString(", with uncommitted changes")
	}
	fmt.Fprintf(&b, "\n%s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "internal protocol %d (speaks %d to %d), data format %d (reads %d to %d)\n",
		compat.Protocol, compat.MinProtocol, compat.Protocol, compat.DataFormat, compat.MinDataFormat, compat.DataFormat)
	return b.String()
}

// printVersion is `parley --version`.
func printVersion(e *Env) error {
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprint(e.Stdout, versionText(bi, ok))
	return nil
}
