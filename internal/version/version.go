// Package version reports which build of tokenmix is running: the module
// version and the VCS revision the go command stamped into the binary
// (runtime/debug.ReadBuildInfo). Run records and arena results store it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info identifies a build.
type Info struct {
	// Module is the main module's path and Version its version: a release
	// tag, a pseudo-version, or "(devel)" for a build without VCS stamping
	// (go test, go run of a single file).
	Module  string `json:"module"`
	Version string `json:"version"`
	// Revision is the VCS commit, Time its commit time, Modified whether the
	// work tree had uncommitted changes; empty when not stamped.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Get returns the running binary's build information.
func Get() Info {
	i := Info{Module: "github.com/tokenmix/tokenmix", Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	if bi.Main.Path != "" {
		i.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is the one-line form stored with results: version, then the
// revision (with "+dirty" for a modified tree) when known.
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		rev := i.Revision
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if i.Modified {
			rev += "+dirty"
		}
		s += " " + rev
	}
	return s
}

// Long is what `tokenmix version` prints.
func (i Info) Long() string {
	s := fmt.Sprintf("%s %s", i.Module, i.Version)
	if i.Revision != "" {
		s += fmt.Sprintf("\nrevision %s", i.Revision)
		if i.Time != "" {
			s += " (" + i.Time + ")"
		}
		if i.Modified {
			s += ", modified work tree"
		}
	} else {
		s += "\nrevision unknown (built without VCS information)"
	}
	return s + "\n" + i.Go
}
