package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/arena"
)

// taskPresets maps `tokenmix arena --task T`'s T to its preset and the
// preset's task: mqar is the recall task in its pairs-first layout.
var taskPresets = map[string]struct{ preset, task string }{
	"recall":     {"recall", "recall"},
	"mqar":       {"mqar", "recall"},
	"listops":    {"listops", "listops"},
	"fmnist":     {"fmnist", "fmnist"},
	"gosrc":      {"gosrc", "gosrc"},
	"pathfinder": {"pathfinder", "pathfinder"},
}

// taskList names taskPresets' tasks for help and errors.
const taskList = "recall, mqar, listops, fmnist, gosrc or pathfinder"

// runArena is `tokenmix arena`: train every registered mixer side by side on
// one task, for a fixed number of steps each and one or more seeds, and
// report test metric, speed and memory. With no flags it runs the default
// preset (recall, ≤ 10 minutes on 2 cores).
func runArena(ctx context.Context, args []string) error {
	fs := newFlags("arena")
	task := fs.String("task", "", "task: "+taskList+" (picks that task's preset)")
	preset := fs.String("preset", "", "preset name (tokenmix presets lists them) or path to a preset file")
	mixers := fs.String("mixers", "", "comma-separated mixer kinds (default: the preset's, or every registered kind)")
	seqLen := fs.String("len", "", "sequence length (recall len, gosrc seq_len, listops max_len with min_len = len/4), or a comma-separated list for a length sweep: every mixer at every length")
	maxMemory := fs.String("max-memory", "", "each run's memory budget (e.g. 16GiB): a run whose plan needs more is not started (default: nine tenths of the memory available when the arena starts, shared among --jobs)")
	budget := fs.String("budget", "", "every mixer's budget, instead of the preset's step counts: steps (e.g. 2000) or training time (e.g. 5m)")
	seeds := fs.Int("seeds", 0, "train each mixer with this many seeds (train.seed, +1, …); tables give the mean and the range (default: the preset's seeds, else 1)")
	out := fs.String("out", "", "arena directory for results, checkpoints and plots (default runs/arena-PRESET for a built-in preset such as mqar, else runs/arena-TASK)")
	dataDir := fs.String("data-dir", "", "fmnist: directory of the IDX files; gosrc: the source tree to read")
	precision := fs.String("precision", "", "every mixer's precision, overriding the preset's: fp32, bf16 or fp16")
	jobs := fs.Int("jobs", 0, "train this many mixers at once in workers, each with threads/jobs threads (default: the preset's jobs, else 1)")
	inProcess := fs.Bool("in-process", false, "run every mixer in this process (peak memory is then not per mixer)")
	asJSON := fs.Bool("json", false, "print the results as one JSON object per mixer on stdout (the table and summaries go to stderr)")
	args, worker := hiddenFlag(args, workerFlag)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if worker {
		if fs.NArg() != 2 {
			return usageErr("arena --worker DIR RUN")
		}
		err := arena.Worker(ctx, fs.Arg(0), fs.Arg(1), os.Stderr)
		if errors.Is(err, arena.ErrInterrupted) {
			return context.Canceled // saved; the arena reports it
		}
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	name := *preset
	if *task != "" {
		tp, ok := taskPresets[*task]
		if !ok {
			return usageErr("arena: unknown task %q (want %s)", *task, taskList)
		}
		if name == "" {
			name = tp.preset
		}
	}
	if name == "" {
		name = "recall"
	}
	p, err := arena.LoadPreset(name)
	if errors.Is(err, arena.ErrUnknownPreset) {
		return usageErr("arena: %v", err)
	} else if err != nil {
		return err
	}
	if *task != "" && p.TaskName() != taskPresets[*task].task {
		return usageErr("arena: preset %s is for task %s, not %s", name, p.TaskName(), *task)
	}
	if *mixers != "" {
		p.Mixers = strings.Split(*mixers, ",")
		if err := arena.CheckMixers(p.Mixers); err != nil {
			return usageErr("arena --%v", err)
		}
	}
	if *seqLen != "" {
		lens, err := parseInts(*seqLen)
		if err != nil {
			return usageErr("arena --len: %v", err)
		}
		if len(lens) == 1 && !p.Sweep() {
			err = p.SetLen(lens[0])
		} else {
			err = p.SetLens(lens)
		}
		if err != nil {
			return usageErr("arena %v", err)
		}
	}
	if *budget != "" {
		if err := p.SetBudget(*budget); err != nil {
			return usageErr("%v", err)
		}
	}
	if *seeds != 0 {
		if *seeds < 1 || *seeds > arena.MaxSeeds {
			return usageErr("arena --seeds: want 1–%d, got %d", arena.MaxSeeds, *seeds)
		}
		p.Seeds = *seeds
	}
	if *precision != "" {
		if err := p.SetPrecision(*precision); err != nil {
			return usageErr("arena --%v", err)
		}
	}
	if *jobs > 0 {
		p.Jobs = *jobs
	}
	if *dataDir != "" {
		key := map[string]string{"fmnist": "data_dir", "gosrc": "root"}[p.TaskName()]
		if key == "" {
			return usageErr("arena: --data-dir applies to fmnist and gosrc, not %s", p.TaskName())
		}
		if err := p.SetTask("", map[string]any{key: *dataDir}); err != nil {
			return err
		}
	}
	if *out == "" {
		// A built-in preset's own directory: mqar and recall share a task.
		dirName := p.TaskName()
		if slices.Contains(arena.PresetNames(), name) {
			dirName = name
		}
		*out = filepath.Join("runs", "arena-"+dirName)
	}
	o := arena.Options{Preset: p, Out: *out, Stdout: os.Stdout, Stderr: os.Stderr}
	if *maxMemory != "" {
		if o.MaxMemory, err = parseBytes(*maxMemory); err != nil || o.MaxMemory == 0 {
			return usageErr("arena --max-memory: want a size such as 16GiB, got %q", *maxMemory)
		}
	} else {
		o.MaxMemory = tokenmix.DefaultMaxMemory() / int64(max(p.Jobs, 1)) // runs at once share it
	}
	if *asJSON {
		o.Stdout = os.Stderr
	}
	if !*inProcess {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Worker = []string{exe, "arena", workerFlag}
	}
	f, err := arena.Run(ctx, o)
	if errors.Is(err, arena.ErrInterrupted) {
		return fmt.Errorf("arena interrupted; rerun the same command to resume from %s", *out)
	}
	if err != nil {
		return err
	}
	var failed []string
	enc := json.NewEncoder(os.Stdout)
	for _, r := range f.Results {
		if r.Status == arena.StatusFailed {
			failed = append(failed, r.Mixer)
		}
		if *asJSON {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(o.Stdout, "\nresults, checkpoints and plots in %s\n", *out)
	if len(failed) > 0 {
		return fmt.Errorf("arena: %d mixer run(s) failed: %s (see %s)", len(failed), strings.Join(failed, ", "), filepath.Join(*out, "results.md"))
	}
	return nil
}

// workerFlag starts the arena's per-run worker process (args: DIR RUN, RUN
// a mixer kind or kind.s<i> for its seed i ≥ 1);
// it is not in the flag set, so help does not show it.
const workerFlag = "--worker"
