// Command tokenmix builds, trains, runs and compares efficient Transformers.
//
// Usage:
//
//	tokenmix [--threads N] <command> [flags]
//
// Run `tokenmix help` for the list of commands. Each command lives in its own
// file as runX(ctx, args) error; main alone maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string) error
}

// commands is the one list of subcommands.
func commands() map[string]command {
	return map[string]command{
		"arena":   {"train every mixer side by side on a task: table, JSON, CSV and plots", runArena},
		"bench":   {"measure kernels, mixers and training steps", runBench},
		"pattern": {"draw attention connectivity (or, with --weights, a model's attention weights on an input) per layer and head as a PNG", runPattern},
		"init":    {"write freshly initialised weights for a config", runInit},
		"grad":    {"one forward and backward: logits, loss and every gradient", runGrad},
		"train":   {"train a byte-level language model on text, with resumable checkpoints", runTrain},
	}
}

// errUsage marks errors that should print usage and exit with code 2.
var errUsage = errors.New("usage")

func main() {
	args := os.Args[1:]
	// Global flag --threads N (or --threads=N), before the command.
	for len(args) > 0 && (args[0] == "--threads" || args[0] == "-threads" || len(args[0]) > 10 && args[0][:10] == "--threads=") {
		var v string
		if args[0] == "--threads" || args[0] == "-threads" {
			if len(args) < 2 {
				fatalUsage("--threads needs a value")
			}
			v, args = args[1], args[2:]
		} else {
			v, args = args[0][10:], args[1:]
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fatalUsage("--threads: want a positive integer")
		}
		parallel.SetThreads(n)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(os.Stdout)
		return
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fatalUsage(fmt.Sprintf("unknown command %q", args[0]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := cmd.run(ctx, args[1:])
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "tokenmix:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "tokenmix:", err)
		os.Exit(1)
	}
}

func fatalUsage(msg string) {
	fmt.Fprintln(os.Stderr, "tokenmix:", msg)
	usage(os.Stderr)
	os.Exit(2)
}

func usage(w *os.File) {
	fmt.Fprintln(w, "usage: tokenmix [--threads N] <command> [flags]\n\ncommands:")
	cs := commands()
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cs[n].summary)
	}
	fmt.Fprintln(w, "\nThe thread count defaults to GOMAXPROCS, or TOKENMIX_THREADS if set.")
}

// usageErr wraps a message as a usage error.
func usageErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
