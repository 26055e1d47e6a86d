// Package configs embeds the arena presets shipped in this directory, so
// `tokenmix arena --preset NAME` works from any working directory. docs/presets.md
// says what each preset is for.
package configs

import (
	"embed"
	"io/fs"
	"strings"
)

// FS holds the *.json presets.
//
//go:embed *.json
var FS embed.FS

// Names lists the embedded presets without the .json suffix.
func Names() []string {
	es, _ := fs.ReadDir(FS, ".")
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	return out
}
