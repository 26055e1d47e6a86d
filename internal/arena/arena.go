package arena

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/internal/train"
	"github.com/tokenmix/tokenmix/internal/version"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// Options configure Run.
type Options struct {
	Preset *Preset
	// Out is the arena directory: arena.json (the resolved preset),
	// runs/<mixer>/ (config, checkpoint, result), results.json, results.csv,
	// results.md and the plots.
	Out string
	// Worker, when not empty, runs each mixer in a child process started
	// as Worker + [Out, mixer] (e.g. ["tokenmix", "arena", "--worker"]), so
	// each run's peak memory is its own and a crash stays in its run.
	// Empty runs every mixer in this process.
	Worker []string
	// Stdout receives the summaries and the table, Stderr the progress.
	Stdout, Stderr io.Writer
}

// plan is the resolved list of runs.
type planned struct {
	kind   string
	causal bool
	note   string
	skip   string // reason, when skipped
	budget Budget
}

// jobFile is what the parent hands a worker in runs/<mixer>/job.json.
type jobFile struct {
	Causal bool   `json:"causal"`
	Note   string `json:"note"`
	Budget string `json:"budget"`
}

// Run trains every mixer of the preset side by side (same model size, seed
// and data order), resuming finished and interrupted runs found in o.Out,
// and writes the results, the table and the plots. It returns the results
// file even when some runs failed; it returns ErrInterrupted if ctx was
// cancelled.
func Run(ctx context.Context, o Options) (*File, error) {
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	p := o.Preset
	if err := CheckMixers(p.Mixers); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	canon := p.Canonical()
	apath := filepath.Join(o.Out, "arena.json")
	old, err := os.ReadFile(apath)
	if err == nil {
		if !bytes.Equal(bytes.TrimSpace(old), bytes.TrimSpace(canon)) {
			return nil, fmt.Errorf("%s holds an arena with different settings (see %s): pick another --out or delete it", o.Out, apath)
		}
		fmt.Fprintf(o.Stdout, "resuming the arena in %s\n", o.Out)
	}
	task, err := p.BuildTaskCached(o.Out)
	if err != nil {
		return nil, err
	}
	// Written once the task exists, so a failed start (say, a missing
	// dataset) does not pin the directory to those settings.
	if old == nil {
		if err := os.WriteFile(apath, append(canon, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	info := task.Info()
	runs, err := planRuns(p, info)
	if err != nil {
		return nil, err
	}
	machine := fmt.Sprintf("%d threads", parallel.Threads())
	if j, t := jobsThreads(o); j > 1 {
		machine = fmt.Sprintf("%d jobs × %d threads", j, t)
	}
	f := &File{Task: info, Preset: canon, Budget: p.Budget, Version: version.Get().String(),
		Machine: fmt.Sprintf("%s/%s, %s, %s", runtime.GOOS, runtime.GOARCH, machine, runtime.Version())}
	switch t := task.(type) {
	case *data.GoSrc:
		f.Baselines = t.Baselines()
	case *data.ListOps:
		f.Baselines = t.Baselines()
	}
	fmt.Fprintf(o.Stdout, "arena: task %s (T ≤ %d, %d/%d/%d examples), %d mixers, budget %s each\n",
		info.Name, info.MaxLen, task.Len(data.Train), task.Len(data.Val), task.Len(data.Test), len(runs), runs[0].budget)
	interrupted, err := runAll(ctx, o, task, info, runs, f)
	if err != nil {
		return f, err
	}
	if err := writeOutputs(o.Out, f); err != nil {
		return f, err
	}
	if interrupted {
		return f, ErrInterrupted
	}
	fmt.Fprintln(o.Stdout)
	Markdown(o.Stdout, f)
	if err := Plots(o.Out, f); err != nil {
		fmt.Fprintf(o.Stdout, "plots: %v\n", err)
	}
	return f, nil
}

// jobsThreads returns how many mixers train at once and each worker's
// threads: the preset's jobs (1 in process), and the threads split between
// them.
func jobsThreads(o Options) (jobs, threads int) {
	jobs = max(o.Preset.Jobs, 1)
	if len(o.Worker) == 0 {
		jobs = 1
	}
	return jobs, max(parallel.Threads()/jobs, 1)
}

// runAll trains the runs, up to jobs at a time, appending the results to f
// in the runs' order and rewriting the outputs after each one finishes. It
// reports whether a run was interrupted; runs not yet started then stay
// unstarted.
func runAll(ctx context.Context, o Options, task data.Task, info data.Info, runs []planned, f *File) (interrupted bool, err error) {
	jobs, threads := jobsThreads(o)
	res := make([]*Result, len(runs))
	var mu sync.Mutex
	var werr error
	finish := func(i int, r Result) {
		mu.Lock()
		defer mu.Unlock()
		res[i] = &r
		fmt.Fprintln(o.Stdout, summary(r))
		f.Results = f.Results[:0]
		for _, r := range res {
			if r != nil {
				f.Results = append(f.Results, *r)
			}
		}
		if err := writeOutputs(o.Out, f); err != nil && werr == nil {
			werr = err
		}
	}
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, r := range runs {
		if r.skip != "" {
			finish(i, Result{Mixer: r.kind, Status: StatusSkipped, Note: r.skip, Metric: info.Metric})
			continue
		}
		sem <- struct{}{}
		mu.Lock()
		stop := interrupted || ctx.Err() != nil
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			r2, err := runOne(ctx, o, task, info, r, threads, jobs > 1)
			if errors.Is(err, ErrInterrupted) {
				mu.Lock()
				interrupted = true
				fmt.Fprintf(o.Stdout, "%s: interrupted; run the same command again to resume\n", r.kind)
				mu.Unlock()
				return
			}
			finish(i, r2)
		}()
	}
	wg.Wait()
	return interrupted || ctx.Err() != nil, werr
}

// planRuns resolves the mixer list, their modes and budgets.
func planRuns(p *Preset, info data.Info) ([]planned, error) {
	causal, err := p.Causal(info)
	if err != nil {
		return nil, err
	}
	budget, err := ParseBudget(p.Budget)
	if err != nil {
		return nil, err
	}
	names := p.Mixers
	if len(names) == 0 {
		for _, k := range registry.All() {
			names = append(names, k.Name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no mixers registered")
	}
	var runs []planned
	n := 0
	for _, name := range names {
		r := planned{kind: name, causal: causal}
		k, err := registry.Lookup(name)
		if err != nil {
			return nil, err
		}
		switch {
		case causal && !k.Causal:
			r.skip = "not causal: cannot run a next-token task"
		case !causal && !k.Bidirectional:
			r.causal = true
			r.note = "causal-only kind: ran causal"
		}
		if info.PadID >= 0 && !k.KeyPadding {
			r.note = joinNote(r.note, "no key padding: pads are mixed in")
		}
		if r.skip == "" {
			n++
		}
		runs = append(runs, r)
	}
	if p.TotalBudget != "" && budget.Duration > 0 && n > 0 {
		tot, _ := time.ParseDuration(p.TotalBudget)
		budget.Duration = min(budget.Duration, (tot / time.Duration(n)).Round(time.Second))
	}
	for i := range runs {
		runs[i].budget = budget
	}
	return runs, nil
}

// runOne returns the finished result found in the run directory, or trains
// the mixer (in this process or a worker).
func runOne(ctx context.Context, o Options, task data.Task, info data.Info, r planned, threads int, lines bool) (Result, error) {
	dir := runDir(o.Out, r.kind)
	var res Result
	if err := readJSON(filepath.Join(dir, "result.json"), &res); err == nil && res.Status == StatusDone {
		res.Note = joinNote(res.Note, "resumed: finished earlier")
		return res, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	if len(o.Worker) == 0 {
		j := &job{kind: r.kind, task: task, info: info, preset: o.Preset, causal: r.causal,
			budget: r.budget, dir: dir, note: r.note, prog: train.NewProgress(o.Stderr)}
		res, err := j.train(ctx)
		if errors.Is(err, ErrInterrupted) {
			return res, err
		}
		if err != nil {
			res.Status, res.Note = StatusFailed, joinNote(r.note, err.Error())
		}
		writeJSON(filepath.Join(dir, "result.json"), res)
		return res, nil
	}
	jf := jobFile{Causal: r.causal, Note: r.note, Budget: r.budget.String()}
	if r.budget.Steps > 0 {
		jf.Budget = strconv.Itoa(r.budget.Steps)
	}
	if err := writeJSON(filepath.Join(dir, "job.json"), jf); err != nil {
		return res, err
	}
	os.Remove(filepath.Join(dir, "result.json"))
	args := append(append([]string{}, o.Worker[1:]...), o.Out, r.kind)
	cmd := exec.Command(o.Worker[0], args...)
	cmd.Stdout, cmd.Stderr = o.Stderr, o.Stderr
	cmd.SysProcAttr = workerAttr()
	cmd.Env = append(os.Environ(), "TOKENMIX_THREADS="+strconv.Itoa(threads))
	if lines {
		cmd.Env = append(cmd.Env, train.ProgressLinesEnv+"=1")
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		// Ask the worker to save and stop, then wait.
		cmd.Process.Signal(os.Interrupt)
		<-done
		return res, ErrInterrupted
	}
	if err := readJSON(filepath.Join(dir, "result.json"), &res); err != nil {
		msg := "worker exited without a result"
		if werr != nil {
			msg += ": " + werr.Error()
		}
		return Result{Mixer: r.kind, Status: StatusFailed, Note: joinNote(r.note, msg), Metric: info.Metric}, nil
	}
	return res, nil
}

// Worker is the child side of Options.Worker: it trains mixer kind of the
// arena in out (reading arena.json and runs/<kind>/job.json) and writes
// runs/<kind>/result.json with the process's peak RSS. It returns
// ErrInterrupted, after saving a checkpoint, if ctx is cancelled.
func Worker(ctx context.Context, out, kind string, stderr io.Writer) error {
	start := time.Now()
	b, err := os.ReadFile(filepath.Join(out, "arena.json"))
	if err != nil {
		return err
	}
	p, err := ParsePreset(b)
	if err != nil {
		return err
	}
	dir := runDir(out, kind)
	var jf jobFile
	if err := readJSON(filepath.Join(dir, "job.json"), &jf); err != nil {
		return err
	}
	budget, err := ParseBudget(jf.Budget)
	if err != nil {
		return err
	}
	var res Result
	task, err := p.BuildTaskCached(out)
	build := time.Since(start).Seconds()
	if err == nil {
		j := &job{kind: kind, task: task, info: task.Info(), preset: p, causal: jf.Causal,
			budget: budget, dir: dir, note: jf.Note, prog: train.NewProgress(stderr)}
		res, err = j.train(ctx)
		if errors.Is(err, ErrInterrupted) {
			return err
		}
	}
	if err != nil {
		res.Mixer, res.Status, res.Note = kind, StatusFailed, joinNote(jf.Note, err.Error())
	}
	res.PeakBytes, _ = bench.PeakRSS() // 0 where /proc is unavailable
	res.WallSeconds += build           // train counts its own wall time, across resumptions
	return writeJSON(filepath.Join(dir, "result.json"), res)
}

func summary(r Result) string {
	if r.Status != StatusDone {
		return fmt.Sprintf("%s: %s (%s)", r.Mixer, r.Status, r.Note)
	}
	return fmt.Sprintf("%s: test %s %s · %d steps · %.0f tok/s · %.1f ms/step · %s",
		r.Mixer, strings.ReplaceAll(string(r.Metric), "_", " "), FormatMetric(r.Metric, r.Test),
		r.Steps, r.TokensPerSec, r.MsPerStep, formatDuration(r.WallSeconds))
}

// writeOutputs writes results.json, results.csv and results.md.
func writeOutputs(out string, f *File) error {
	if err := writeJSON(filepath.Join(out, "results.json"), f); err != nil {
		return err
	}
	var csvb, md bytes.Buffer
	if err := WriteCSV(&csvb, f.Results); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.csv"), csvb.Bytes(), 0o644); err != nil {
		return err
	}
	Markdown(&md, f)
	return os.WriteFile(filepath.Join(out, "results.md"), md.Bytes(), 0o644)
}

// LoadFile reads a results.json.
func LoadFile(path string) (*File, error) {
	var f File
	if err := readJSON(path, &f); err != nil {
		return nil, err
	}
	return &f, nil
}
