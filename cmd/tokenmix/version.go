package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/version"
)

// runVersion is `tokenmix version`: the module version and VCS revision
// stamped into this binary.
func runVersion(ctx context.Context, args []string) error {
	fs := newFlags("version")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	v := version.Get()
	if *asJSON {
		return printJSON(v)
	}
	fmt.Println(v.Long())
	return nil
}
