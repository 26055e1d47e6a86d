package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// runBench is `tokenmix bench SUB`: it runs one of benchCommands. Each
// sub-command parses its flags, calls its protocol in internal/bench and
// prints the result; this file holds the flags they share.
func runBench(ctx context.Context, args []string) error {
	return runGroup(ctx, "bench", "benchmark", args)
}

type gemmFlags struct {
	fs                 *flag.FlagSet
	asJSON             *bool
	threadsList, clock *string
	reps               *int
}

func newGemmFlags(name string) gemmFlags {
	fs := newFlags("bench " + name)
	return gemmFlags{fs: fs,
		asJSON:      fs.Bool("json", false, "print one JSON object per line"),
		threadsList: fs.String("threads-list", "1,2", "comma-separated thread counts"),
		reps:        fs.Int("reps", 7, "timed samples per measurement (median reported)"),
		clock:       fs.String("clock", "wall", "wall, or cpu: one thread timed by its CPU time (robust on a busy machine)"),
	}
}

// options parses args and returns the options they give. --clock cpu
// measures one thread: the thread list is then [1] unless --threads-list
// was given.
func (g gemmFlags) options(args []string) (bench.GemmOptions, error) {
	if err := parseFlags(g.fs, args); err != nil {
		return bench.GemmOptions{}, err
	}
	threads, err := parseInts(*g.threadsList)
	if err != nil {
		return bench.GemmOptions{}, usageErr("%s: --threads-list: %v", g.fs.Name(), err)
	}
	o := bench.GemmOptions{Threads: threads, Reps: *g.reps, JSON: *g.asJSON}
	switch *g.clock {
	case "wall":
	case "cpu":
		o.CPU = true
		set := false
		g.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "threads-list" })
		if !set {
			o.Threads = []int{1}
		}
	default:
		return o, usageErr("%s: --clock: want wall or cpu, got %q", g.fs.Name(), *g.clock)
	}
	if err := o.Check(); err != nil {
		return o, usageErr("%s: %v", g.fs.Name(), err)
	}
	return o, nil
}

// benchModel holds the flags that `bench mixer` and `bench train` share and
// the child-process protocol both use: the command re-executes itself with
// childFlag, the child measures and prints its result as JSON, and the
// parent's peak RSS is then that child's alone.
type benchModel struct {
	name    string // "mixer" or "train"
	fs      *flag.FlagSet
	cfgPath *string
	T, B    *int
	reps    *int
	asJSON  *bool
	prec    *string
	bf16    *string
	maxMem  func() (int64, error)
}

func newBenchModel(name, cfgHelp string, reps int, repsHelp string) *benchModel {
	fs := newFlags("bench " + name)
	return &benchModel{
		name:    name,
		fs:      fs,
		cfgPath: fs.String("config", "", cfgHelp),
		T:       fs.Int("len", 0, "sequence length T (raises max_len if larger)"),
		B:       fs.Int("batch", 1, "batch size B"),
		reps:    fs.Int("reps", reps, repsHelp),
		asJSON:  fs.Bool("json", false, "print one JSON object"),
		prec:    fs.String("precision", "", "override the config's precision: fp32, bf16 or fp16"),
		bf16:    fs.String("bf16-path", "", "force the bf16 GEMM path: go, avx2fma, avx512fma, avx512bf16 or amx, where the CPU has it (default: best)"),
		maxMem:  maxMemoryFlag(fs, "bench "+name, "the memory budget: a measurement whose plan at --batch × --len needs more is refused before it allocates"),
	}
}

// parse parses and checks args and loads the config, with max_len raised to
// T; child reports whether this process is the measuring child.
func (b *benchModel) parse(args []string) (cfg *model.Config, child bool, err error) {
	args, child = hiddenFlag(args, childFlag)
	if err := parseFlags(b.fs, args); err != nil {
		return nil, false, err
	}
	if *b.cfgPath == "" || *b.T < 1 || *b.B < 1 || *b.reps < 1 || b.fs.NArg() > 0 {
		return nil, false, wantUsage(b.fs)
	}
	cfg, err = model.LoadConfig(*b.cfgPath)
	if err != nil {
		return nil, false, err
	}
	if *b.T > cfg.MaxLen {
		cfg.MaxLen = *b.T
	}
	if *b.prec != "" {
		if err := cfg.SetPrecision(*b.prec); err != nil {
			return nil, false, usageErr("bench %s --precision: %v", b.name, err)
		}
	}
	if *b.bf16 != "" {
		if _, err := kernels.SetBF16Path(*b.bf16); err != nil {
			return nil, false, usageErr("bench %s --bf16-path: %v", b.name, err)
		}
	}
	if _, err := b.maxMem(); err != nil {
		return nil, false, err
	}
	return cfg, child, nil
}

// checkBudget refuses, before anything is allocated, a measurement of cfg
// whose plan at --batch × --len (training or inference) needs more than
// --max-memory.
func (b *benchModel) checkBudget(cfg *model.Config, train bool) error {
	budget, err := b.maxMem()
	if err != nil {
		return err
	}
	if err := model.CheckBudget(cfg, *b.B, *b.T, parallel.Threads(), train, budget); err != nil {
		return fmt.Errorf("bench %s: %w", b.name, err)
	}
	return nil
}

// inChild runs the measurement in a fresh child process with the same flags
// (and extra ones) and thread count, decoding its JSON result into dst.
func (b *benchModel) inChild(dst any, extra ...string) error {
	args := append([]string{"bench", b.name, "--config", *b.cfgPath, "--len", strconv.Itoa(*b.T), "--batch", strconv.Itoa(*b.B),
		"--reps", strconv.Itoa(*b.reps), "--precision", *b.prec, "--bf16-path", *b.bf16, "--max-memory", "0"}, extra...)
	return bench.InChild(dst, []string{"TOKENMIX_THREADS=" + strconv.Itoa(parallel.Threads())}, append(args, childFlag)...)
}

// childFlag marks the re-executed measuring process of the bench
// subcommands; it is not in their flag sets, so help does not show it.
const childFlag = "--measure-in-this-process"
