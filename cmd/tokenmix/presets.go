package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tokenmix/tokenmix/internal/arena"
)

// presetInfo is one line of `tokenmix presets --json`.
type presetInfo struct {
	Name        string `json:"name"`
	Task        string `json:"task"`
	Time        string `json:"time"` // wall time on an idle 2-core machine
	Budget      string `json:"budget"`
	Description string `json:"description"`
}

// runPresets is `tokenmix presets`: the built-in arena presets.
func runPresets(ctx context.Context, args []string) error {
	fs := newFlags("presets")
	asJSON := fs.Bool("json", false, "print one JSON object per preset")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, name := range arena.PresetNames() {
		p, err := arena.LoadPreset(name)
		if err != nil {
			return err
		}
		in := presetInfo{name, p.TaskName(), p.Time, p.Budget + " per mixer", p.Description}
		if p.TotalBudget != "" {
			in.Budget += ", " + p.TotalBudget + " in all"
		}
		if *asJSON {
			if err := enc.Encode(in); err != nil {
				return err
			}
			continue
		}
		fmt.Printf("%s (task %s, about %s on 2 cores; budget %s)\n  %s\n\n", in.Name, in.Task, in.Time, in.Budget, in.Description)
	}
	return nil
}
