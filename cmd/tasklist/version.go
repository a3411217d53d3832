package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

var versionCommand = command{
	name:    "version",
	summary: "print tasklist's version and the Go release that built it",
	details: `
The version is the module's, as the go command stamped it into the binary: a release tag,
a pseudo-version, or (devel) for a build from a checkout, then the commit and whether the
checkout had changes when the go command recorded them.`,
	setup: func(*flag.FlagSet) runFunc { return printVersion },
}

func printVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return 0
}

// versionLine says which tasklist this is, from what the go command recorded in the binary.
func versionLine(info *debug.BuildInfo, ok bool) string {
	version, goVersion := "(unknown)", runtime.Version()
	if ok {
		version, goVersion = info.Main.Version, info.GoVersion
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			version += " commit " + rev[:min(len(rev), 12)]
			if settings["vcs.modified"] == "true" {
				version += " with changes"
			}
		}
	}
	return fmt.Sprintf("tasklist %s %s %s/%s", version, goVersion, runtime.GOOS, runtime.GOARCH)
}
