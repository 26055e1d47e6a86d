package main

import (
	"context"
	"fmt"

	"github.com/tokenmix/tokenmix/internal/run"
)

// runVerify is `tokenmix verify`: every checkpoint of a run against the
// checksums its state.json records, one line each.
func runVerify(ctx context.Context, args []string) error {
	fs := newFlags("verify")
	path := fs.String("run", "", "run directory")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	d, err := run.Open(*path)
	if err != nil {
		return err
	}
	steps, err := d.Checkpoints()
	if err != nil {
		return err
	}
	if len(steps) == 0 {
		return fmt.Errorf("verify: %s has no checkpoint", *path)
	}
	bad := 0
	for _, step := range steps {
		checked, err := d.Verify(step)
		switch {
		case err != nil:
			bad++
			fmt.Printf("checkpoint %d: %v\n", step, err)
		case !checked:
			fmt.Printf("checkpoint %d: no checksums recorded (written before checkpoints had them)\n", step)
		default:
			fmt.Printf("checkpoint %d: ok\n", step)
		}
	}
	if bad > 0 {
		return fmt.Errorf("verify: %d of %d checkpoints of %s are damaged", bad, len(steps), *path)
	}
	return nil
}
