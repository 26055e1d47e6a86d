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
	Seeds       int    `json:"seeds"`
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
		in := presetInfo{Name: name, Task: p.TaskName(), Time: p.Time, Budget: p.BudgetSummary(),
			Seeds: p.NumSeeds(), Description: p.Description}
		if *asJSON {
			if err := enc.Encode(in); err != nil {
				return err
			}
			continue
		}
		seeds := "1 seed"
		if in.Seeds > 1 {
			seeds = fmt.Sprintf("%d seeds", in.Seeds)
		}
		fmt.Printf("%s (task %s, about %s on 2 cores; budget %s; %s)\n  %s\n\n", in.Name, in.Task, in.Time, in.Budget, seeds, in.Description)
	}
	return nil
}
