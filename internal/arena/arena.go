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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
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
	// MaxMemory, when positive, is each run's memory budget in bytes: a
	// run whose plan (model.TrainNeed: activations and their gradients,
	// parameters, gradients, AdamW moments, scratch and the checkpoint
	// save's buffers, at the longest batch) exceeds it is not started, and
	// its row says so.
	MaxMemory int64
	// Stdout receives the summaries and the table, Stderr the progress.
	Stdout, Stderr io.Writer
}

// planned is one resolved run: a mixer, a seed and, in a sweep, a length.
type planned struct {
	kind   string
	seed   int // index: the run trains with Preset.Seed(seed)
	length int // the sweep's length; 0 outside a sweep
	causal bool
	note   string
	skip   string // reason, when skipped
	budget Budget
	bytes  int64 // the memory plan (0 when the config did not build)
	// preset is the run's single-length preset (Preset.AtLen in a
	// sweep), task and info its task.
	preset *Preset
	task   data.Task
	info   data.Info
}

// name is the run's directory under runs/: the kind for the first seed,
// kind.s<i> for seed index i ≥ 1, with .len<T> after the kind in a sweep.
func (r planned) name() string { return runName(r.kind, r.seed, r.length) }

func runName(kind string, seed, length int) string {
	if length > 0 {
		kind = fmt.Sprintf("%s.len%d", kind, length)
	}
	if seed == 0 {
		return kind
	}
	return fmt.Sprintf("%s.s%d", kind, seed)
}

// jobFile is what the parent hands a worker in runs/<run>/job.json. Kind
// and Seed are absent (the run's name, 0) in files written before seeds.
type jobFile struct {
	Kind   string `json:"kind,omitempty"`
	Seed   int    `json:"seed,omitempty"` // index
	Len    int    `json:"len,omitempty"`  // the sweep's length
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
	if canon == nil {
		return nil, fmt.Errorf("preset: a value JSON cannot hold")
	}
	apath := filepath.Join(o.Out, "arena.json")
	old, err := os.ReadFile(apath)
	if err == nil {
		if !sameArena(old, p) {
			return nil, fmt.Errorf("%s holds an arena with different settings (see %s): pick another --out or delete it", o.Out, apath)
		}
		fmt.Fprintf(o.Stdout, "resuming the arena in %s\n", o.Out)
	}
	qs, err := p.LenPresets()
	if err != nil {
		return nil, err
	}
	tasks := make([]data.Task, len(qs))
	for i, q := range qs {
		if tasks[i], err = q.BuildTaskCached(o.Out); err != nil {
			return nil, err
		}
	}
	task := tasks[0]
	// Written once the task exists, so a failed start (say, a missing
	// dataset) does not pin the directory to those settings. A resumed
	// arena may differ in its number of seeds only.
	if !bytes.Equal(bytes.TrimSpace(old), bytes.TrimSpace(canon)) {
		if err := os.WriteFile(apath, append(canon, '\n'), 0o644); err != nil {
			return nil, err
		}
	}
	info := task.Info()
	var runs []planned
	for i, q := range qs {
		length := 0
		if p.Sweep() {
			length = p.Lens[i].Len
		}
		rs, err := planRuns(q, tasks[i].Info(), length, o.MaxMemory)
		if err != nil {
			return nil, err
		}
		for j := range rs {
			rs[j].task = tasks[i]
		}
		runs = append(runs, rs...)
	}
	seeds := make([]uint64, p.NumSeeds())
	for i := range seeds {
		seeds[i] = p.Seed(i)
	}
	jobs, threads := jobsThreads(o)
	f := &File{Task: info, Preset: canon, Budget: p.Budget, Seeds: seeds, Results: []Result{}, Version: version.Get().String(),
		CPU: bench.CPUName(), Kernels: kernels.CurrentPath().String(), BF16Kernels: kernels.BF16Path(),
		Threads: threads, Jobs: jobs, MaxMemory: o.MaxMemory}
	for _, l := range p.Lens {
		f.Lens = append(f.Lens, l.Len)
	}
	f.Machine = bench.MachineLine(f.CPU, f.Threads, f.Jobs, f.Kernels, f.BF16Kernels)
	mixers := fmt.Sprintf("%d mixers", len(runs)/len(seeds)/len(qs))
	if len(seeds) > 1 {
		mixers += fmt.Sprintf(" × %d seeds", len(seeds))
	}
	lens := fmt.Sprintf("T ≤ %d", info.MaxLen)
	if p.Sweep() {
		mixers += fmt.Sprintf(" × %d lengths", len(qs))
		lens = "T = " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(f.Lens)), ", "), "[]")
	}
	fmt.Fprintf(o.Stdout, "arena: task %s (%s, %d/%d/%d examples), %s, %s; %s\n",
		info.Name, lens, task.Len(data.Train), task.Len(data.Val), task.Len(data.Test),
		mixers, budgetLine(runs), f.Machine)
	switch t := task.(type) {
	case *data.GoSrc:
		f.Baselines = t.Baselines()
	case *data.ListOps:
		f.Baselines = t.Baselines()
	case *data.FMNIST:
		f.Baselines = pixelBaselines(t, seeds[0])
	}
	interrupted, err := runAll(ctx, o, runs, f)
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
func runAll(ctx context.Context, o Options, runs []planned, f *File) (interrupted bool, err error) {
	jobs, threads := jobsThreads(o)
	res := make([]*Result, len(runs))
	var mu sync.Mutex
	var werr error
	finish := func(i int, r Result) {
		mu.Lock()
		defer mu.Unlock()
		res[i] = &r
		fmt.Fprintln(o.Stdout, summary(r, len(f.Seeds) > 1, len(f.Lens) > 0))
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
			finish(i, Result{Mixer: r.kind, Len: r.resultLen(), Seed: r.preset.Seed(r.seed), Status: StatusSkipped,
				Note: r.skip, Metric: r.info.Metric, PlannedBytes: r.bytes})
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
			r2, err := runOne(ctx, o, r, threads, jobs > 1)
			if errors.Is(err, ErrInterrupted) {
				mu.Lock()
				interrupted = true
				fmt.Fprintf(o.Stdout, "%s: interrupted; run the same command again to resume\n", r.name())
				mu.Unlock()
				return
			}
			finish(i, r2)
		}()
	}
	wg.Wait()
	return interrupted || ctx.Err() != nil, werr
}

// resultLen is the length a run's result reports: the sweep's, else the
// task's longest sequence.
func (r planned) resultLen() int {
	if r.length > 0 {
		return r.length
	}
	return r.info.MaxLen
}

// planRuns resolves the mixer list of a single-length preset, their modes,
// budgets and memory plans: one run per mixer and seed, the seeds of a
// mixer next to each other. length is the sweep's length (0 outside a
// sweep). A run whose plan exceeds maxMemory (when positive) is skipped.
// The caller sets each run's task.
func planRuns(p *Preset, info data.Info, length int, maxMemory int64) ([]planned, error) {
	causal, err := p.Causal(info)
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
	var kinds []planned
	n := 0 // runnable runs with a duration budget
	for _, name := range names {
		r := planned{kind: name, causal: causal, length: length, preset: p, info: info}
		k, err := registry.Lookup(name)
		if err != nil {
			return nil, err
		}
		if r.budget, err = p.BudgetFor(name); err != nil {
			return nil, err
		}
		switch {
		case p.Skip[name] != "":
			r.skip = p.Skip[name]
		case causal && !k.Causal:
			r.skip = "not causal: cannot run a next-token task"
		case !causal && !k.Bidirectional:
			r.causal = true
			r.note = "causal-only kind: ran causal"
		}
		if info.PadID >= 0 && !k.KeyPadding {
			r.note = joinNote(r.note, "no key padding: pads are mixed in")
		}
		if r.skip == "" && maxMemory > 0 {
			r.bytes = planBytes(p, name, info, r.causal)
			if r.bytes > maxMemory {
				r.skip = fmt.Sprintf("over the memory budget: the plan needs %s, --max-memory is %s",
					memstat.FormatBytes(r.bytes), memstat.FormatBytes(maxMemory))
			}
		}
		if r.skip == "" && r.budget.Duration > 0 {
			n += p.NumSeeds()
		}
		kinds = append(kinds, r)
	}
	if p.TotalBudget != "" && n > 0 {
		tot, _ := time.ParseDuration(p.TotalBudget)
		share := max((tot / time.Duration(n)).Round(time.Second), time.Second)
		for i := range kinds {
			if kinds[i].budget.Duration > 0 {
				kinds[i].budget.Duration = min(kinds[i].budget.Duration, share)
			}
		}
	}
	var runs []planned
	for _, r := range kinds {
		for i := range p.NumSeeds() {
			r.seed = i
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// planBytes is kind's memory need under p at its largest batch shape
// (model.TrainNeed; 0 when its config does not build: the run then fails
// with the reason). Nothing is allocated.
func planBytes(p *Preset, kind string, info data.Info, causal bool) int64 {
	steps := 1 // the fewest a config takes: one, after any curriculum
	for _, cs := range p.Train.Curriculum {
		steps += cs.Steps
	}
	cfg, err := p.ModelConfig(kind, info, causal, steps)
	if err != nil {
		return 0
	}
	n, err := model.TrainNeed(cfg, 0)
	if err != nil {
		return 0
	}
	return n.Bytes()
}

// budgetLine describes the runs' budgets: "budget 1200 steps each",
// "budget 45s each" or "budgets 876–2903 steps".
func budgetLine(runs []planned) string {
	if len(runs) == 0 {
		return "no runs"
	}
	lo, hi := runs[0].budget, runs[0].budget
	for _, r := range runs[1:] {
		b := r.budget
		if (b.Steps > 0) != (lo.Steps > 0) {
			return "budgets of steps and of time"
		}
		lo.Steps, hi.Steps = min(lo.Steps, b.Steps), max(hi.Steps, b.Steps)
		lo.Duration, hi.Duration = min(lo.Duration, b.Duration), max(hi.Duration, b.Duration)
	}
	switch {
	case lo == hi:
		return "budget " + lo.String() + " each"
	case lo.Steps > 0:
		return fmt.Sprintf("budgets %d–%d steps", lo.Steps, hi.Steps)
	}
	return "budgets " + lo.String() + "–" + hi.String()
}

// sameArena reports whether arena.json's content old describes p, up to
// the number of seeds: more seeds add runs to those already made, fewer
// leave some unused.
func sameArena(old []byte, p *Preset) bool {
	q, err := ParsePreset(old)
	if err != nil {
		return false
	}
	a, b := *q, *p
	a.Seeds, b.Seeds = 0, 0
	return bytes.Equal(a.Canonical(), b.Canonical())
}

// runOne returns the finished result found in the run directory, or trains
// the mixer (in this process or a worker).
func runOne(ctx context.Context, o Options, r planned, threads int, lines bool) (Result, error) {
	dir := runDir(o.Out, r.name())
	var res Result
	if err := readJSON(filepath.Join(dir, "result.json"), &res); err == nil && res.Status == StatusDone {
		res.Note = joinNote(res.Note, "resumed: finished earlier")
		return res, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	if len(o.Worker) == 0 {
		j := &job{kind: r.kind, seed: r.seed, length: r.length, task: r.task, info: r.info, preset: r.preset, causal: r.causal,
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
	jf := jobFile{Kind: r.kind, Seed: r.seed, Len: r.length, Causal: r.causal, Note: r.note, Budget: r.budget.String()}
	if r.budget.Steps > 0 {
		jf.Budget = strconv.Itoa(r.budget.Steps)
	}
	if err := writeJSON(filepath.Join(dir, "job.json"), jf); err != nil {
		return res, err
	}
	os.Remove(filepath.Join(dir, "result.json"))
	args := append(append([]string{}, o.Worker[1:]...), o.Out, r.name())
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
		return Result{Mixer: r.kind, Len: r.resultLen(), Seed: r.preset.Seed(r.seed), Status: StatusFailed,
			Note: joinNote(r.note, msg), Metric: r.info.Metric, PlannedBytes: r.bytes}, nil
	}
	return res, nil
}

// Worker is the child side of Options.Worker: it trains run name of the
// arena in out (a mixer kind, or kind.s<i> for its seed i ≥ 1; reading
// arena.json and runs/<name>/job.json) and writes runs/<name>/result.json
// with the process's peak RSS. It returns ErrInterrupted, after saving a
// checkpoint, if ctx is cancelled.
func Worker(ctx context.Context, out, name string, stderr io.Writer) error {
	start := time.Now()
	b, err := os.ReadFile(filepath.Join(out, "arena.json"))
	if err != nil {
		return err
	}
	p, err := ParsePreset(b)
	if err != nil {
		return err
	}
	dir := runDir(out, name)
	var jf jobFile
	if err := readJSON(filepath.Join(dir, "job.json"), &jf); err != nil {
		return err
	}
	kind := jf.Kind
	if kind == "" {
		kind = name
	}
	budget, err := ParseBudget(jf.Budget)
	if err != nil {
		return err
	}
	if jf.Len > 0 {
		if p, err = lenPreset(p, jf.Len); err != nil {
			return err
		}
	}
	var res Result
	task, err := p.BuildTaskCached(out)
	build := time.Since(start).Seconds()
	if err == nil {
		j := &job{kind: kind, seed: jf.Seed, length: jf.Len, task: task, info: task.Info(), preset: p, causal: jf.Causal,
			budget: budget, dir: dir, note: jf.Note, prog: train.NewProgress(stderr)}
		res, err = j.train(ctx)
		if errors.Is(err, ErrInterrupted) {
			return err
		}
	}
	if err != nil {
		res.Mixer, res.Status, res.Note = kind, StatusFailed, joinNote(jf.Note, err.Error())
		res.Seed = p.Seed(jf.Seed)
	}
	res.PeakBytes, _ = memstat.PeakRSS() // 0 where /proc is unavailable
	res.WallSeconds += build             // train counts its own wall time, across resumptions
	return writeJSON(filepath.Join(dir, "result.json"), res)
}

// lenPreset returns the single-length preset of sweep p at length n.
func lenPreset(p *Preset, n int) (*Preset, error) {
	for _, l := range p.Lens {
		if l.Len == n {
			return p.AtLen(l)
		}
	}
	return nil, fmt.Errorf("arena: length %d is not among the preset's lens", n)
}

// summary is the line printed when a run ends; withSeed names its seed,
// withLen its length.
func summary(r Result, withSeed, withLen bool) string {
	name := r.Mixer
	if withLen {
		name = fmt.Sprintf("%s at T=%d", r.Mixer, r.Len)
	}
	if withSeed {
		name = fmt.Sprintf("%s (seed %d)", name, r.Seed)
	}
	if r.Status != StatusDone {
		return fmt.Sprintf("%s: %s (%s)", name, r.Status, r.Note)
	}
	return fmt.Sprintf("%s: test %s %s · %d steps · %.0f tok/s · %.1f ms/step · %s",
		name, strings.ReplaceAll(string(r.Metric), "_", " "), FormatMetric(r.Metric, r.Test),
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
