package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/bench"
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

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
		bf16:    fs.String("bf16-path", "", "force the bf16 GEMM path: go, avx512bf16 or amx, where the CPU has it (default: best)"),
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
	return cfg, child, nil
}

// inChild runs the measurement in a fresh child process with the same flags
// and thread count, decoding its JSON result into dst.
func (b *benchModel) inChild(dst any) error {
	return bench.InChild(dst, []string{"TOKENMIX_THREADS=" + strconv.Itoa(parallel.Threads())},
		"bench", b.name, "--config", *b.cfgPath, "--len", strconv.Itoa(*b.T), "--batch", strconv.Itoa(*b.B),
		"--reps", strconv.Itoa(*b.reps), "--precision", *b.prec, "--bf16-path", *b.bf16, childFlag)
}

func printJSON(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// childFlag marks the re-executed measuring process of the bench
// subcommands; it is not in their flag sets, so help does not show it.
const childFlag = "--measure-in-this-process"

// hiddenFlag removes every occurrence of the boolean flag name from args and
// reports whether there was one.
func hiddenFlag(args []string, name string) ([]string, bool) {
	var out []string
	found := false
	for _, a := range args {
		if a == name {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}
