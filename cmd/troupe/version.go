package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

func init() {
	commands["version"] = command{"print troupe's version (module version, VCS revision, Go version)", runVersion}
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "version", stdout, stderr)
	if code, ok := parse(fs, args); !ok {
		return code
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stdout, "troupe (version unknown: built without module support)")
		return exitOK
	}
	fmt.Fprintln(stdout, versionLine(info))
	return exitOK
}

// versionLine renders the build information as "troupe VERSION [(rev
// REVISION[, modified], TIME)] GOVERSION": the module version ("(devel)"
// for a build from a checkout) and, when the build recorded them, the
// VCS revision and its time.
func versionLine(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	line := "troupe " + info.Main.Version
	if line == "troupe " {
		line += "(unknown)"
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts := []string{"rev " + rev}
		if settings["vcs.modified"] == "true" {
			parts[0] += ", modified"
		}
		if t := settings["vcs.time"]; t != "" {
			parts = append(parts, t)
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line + " " + info.GoVersion
}
