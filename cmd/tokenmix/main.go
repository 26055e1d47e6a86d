// Command tokenmix builds, trains, runs and compares efficient Transformers.
//
// Usage:
//
//	tokenmix [--threads N] <command> [flags]
//
// Run `tokenmix help` for the list of commands and `tokenmix help CMD` for
// one command's flags. Each command lives in its own file as
// runX(ctx, args) error; main alone maps errors to exit codes.
//
// Every command follows the same conventions:
//
//	-h, --help, help CMD    the command's usage on stdout, exit 0
//	usage error             one message on stderr, exit 2, nothing written
//	                        (unknown flag, bad value, missing argument,
//	                        unknown mixer or preset name)
//	runtime error           one message on stderr, exit 1
//	SIGINT, SIGTERM         train and arena stop at the end of the current
//	                        step, save, and exit 130 or 143; serve drains
//	                        (new requests 503, in-flight ones finish) and
//	                        exits 0; a second signal exits at once. Other
//	                        commands exit at once.
//	progress                stderr; plain lines when stderr is not a terminal
//	results                 stdout; --json prints one object per line
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/tokenmix/tokenmix/internal/parallel"
)

// command is one subcommand, or one sub-command of `bench` or `tokenizer`.
type command struct {
	synopsis string // the arguments after the command's name
	summary  string
	run      func(ctx context.Context, args []string) error
	// graceful commands watch ctx: a first SIGINT or SIGTERM asks them to
	// stop cleanly. Other commands die at once on a signal.
	graceful bool
	// drains marks serve: a signal is its normal end, exit 0.
	drains bool
}

// commands is the one list of subcommands.
func commands() map[string]command {
	return map[string]command{
		"arena": {"[--task T | --preset P] [--mixers a,b] [--budget B] [--out DIR] [flags]",
			"train every mixer side by side on a task: table, JSON, CSV and plots", runArena, true, false},
		"bench": {"<" + strings.Join(sortedNames(benchCommands()), "|") + "> [flags]",
			"measure kernels, mixers and training steps", runBench, false, false},
		"pattern": {"--config C --out P.png [--len T] [--grid W --query Q] | --config C --weights W --text S|--tokens-file F --out P.png [--layer L]",
			"draw attention connectivity (or, with --weights, a model's attention weights on an input) per layer and head as a PNG", runPattern, false, false},
		"init": {"--config C --out W.safetensors [--seed N]",
			"write freshly initialised weights for a config", runInit, false, false},
		"predict": {"--run DIR [--input F] [--checkpoint N]",
			"classify, score or tag input lines (JSONL or plain text) with a trained model, one JSON result per line", runPredict, false, false},
		"embed": {"--run DIR [--input F] [--checkpoint N]",
			"an embedder's unit-length vector of each input line (JSONL or plain text): {\"embedding\": […]} per line", runEmbed, false, false},
		"tag": {"--run DIR [--input F] [--checkpoint N]",
			"the labelled spans a tagger finds in each input line (JSONL or plain text): {\"spans\": [{\"start\", \"end\", \"label\", \"score\"}, …]} per line", runTag, false, false},
		"eval": {"--run DIR (--data PATH [--context N] [--split all|train|val] [--val-frac F] | --task T [--split train|val|test]) [--json]",
			"a classifier's loss and accuracy on labelled JSONL, a causal lm's bits per byte on a text file or directory, or a model's metric on a split of a built-in task", runEval, false, false},
		"data": {"export --task NAME|JSON [--split train|val|test] [--len N] [--data-dir DIR] [--out F]",
			"write a split of a task of the task list as JSONL, the format tokenmix train reads", runData, false, false},
		"export": {"--run DIR --out MODEL [--format dir|onnx] [--dtype f32|bf16|f16] [--checkpoint N]",
			"write a run's config and weights, without optimizer state, as a model directory or one ONNX file", runExport, false, false},
		"generate": {"--run DIR --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--stop TEXT] [--json]",
			"continue a prompt with a causal byte-level lm, writing the bytes as they come", runGenerate, true, false},
		"grad": {"--config C --weights W --batch B --out O [--float64]",
			"one forward and backward: logits, loss and every gradient", runGrad, false, false},
		"train": {"(--data PATH [--val V] | --task T) --out DIR [--config C] [--mixer K] [--size small|base] [--resume] [--val-frac F] [--max-memory SIZE] [--on-save-error stop|continue] [--json]",
			"train a language model on text or conversations, a classifier or a tagger on JSONL, or a model on a built-in task, with resumable checkpoints", runTrain, true, false},
		"mixers": {"[--json]",
			"list every mixer kind: paper, capabilities, options", runMixers, false, false},
		"presets": {"[--json]",
			"list the built-in arena presets", runPresets, false, false},
		"serve": {"--run NAME=DIR [--run NAME=DIR …] [--addr 127.0.0.1:8080] [--token-file F] [flags]",
			"serve models over HTTP: classify, score, tag and OpenAI-style completions and chat, batched, with metrics", runServe, true, true},
		"tokenizer": {"<" + strings.Join(sortedNames(tokenizerCommands()), "|") + "> [flags]",
			"train, inspect and run byte-level BPE tokenizers (tokenizer.json, tiktoken rank files)", runTokenizer, false, false},
		"verify": {"--run DIR",
			"check every checkpoint of a run against the checksums its state.json records; exit 1 naming each damaged file", runVerify, false, false},
		"version": {"[--json]",
			"print the module version and VCS revision", runVersion, false, false},
	}
}

// benchCommands is the list of `tokenmix bench` sub-commands. Each lives in
// its own file bench_<name>.go.
func benchCommands() map[string]command {
	return map[string]command{
		"decode": {"--run DIR | --config C [--reps N] [--streams N] [--json]",
			"one stream's prefill speed and per-token latency at positions 256, 1024 and 4096, with its state's bytes; StepStreams' tokens/s", runBenchDecode, false, false},
		"infer": {"--config C --len T [--batch B] [--mixer JSON] [--reps N] [--rounds R] [--onnxruntime DIR] [--max-memory SIZE] [--json]",
			"sequences/s of tokenmix's inference forward against ONNX Runtime for Node on the same model's ONNX export, alternated", runBenchInfer, false, false},
		"gemm": {"[--threads-list 1,2] [--trans NN] [--dtype f32|bf16] [--path P] [--reps N] [--clock wall|cpu] [--json]",
			"GEMM GFLOP/s on the benchmark shapes: float32 against the measured FMA peak, or bf16 against float32", runBenchGemm, false, false},
		"peak": {"[--threads-list 1,2] [--reps N] [--clock wall|cpu] [--json]",
			"the FMA peak of this CPU per thread count, and the bf16 dot-product peak where it has one", runBenchPeak, false, false},
		"scaling": {"[--mixers a,b] [--min-len N] [--max-len N] [--max-memory 4GiB] [--out DIR] [flags]",
			"time and memory of every mixer over doubling sequence lengths, with plots", runBenchScaling, false, false},
		"serve": {"--run DIR | --config C [--run … | --config …] [--clients 1,8,64] [--streams 1,16] [--duration D] [--idle D] [--soak D [--out DIR]] [--json]",
			"an in-process server under HTTP load: classify and embeddings requests/s and latency with and without batching, completion tokens/s, idle CPU", runBenchServe, false, false},
		"mixer": {"--config C --len T [--batch B] [--reps N] [--max-memory SIZE] [--json]",
			"forward and backward time of one mixer layer, planned bytes and peak RSS", runBenchMixer, false, false},
		"train": {"--config C --len T [--batch B] [--reps N] [--plan] [--profile] [--cpuprofile FILE] [--max-memory SIZE] [--json]",
			"time of a full training step, tokens/s, planned bytes and peak RSS", runBenchTrain, false, false},
	}
}

// errHelp marks a help request whose usage was printed: exit 0.
var errHelp = errors.New("help requested")

// usageError is an error that exits with code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usageErr returns a usage error.
func usageErr(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

func main() { os.Exit(execute(os.Args[1:])) }

// execute runs one command line and returns the exit code.
func execute(args []string) int {
	args, err := globalFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenmix:", err)
		return 2
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		usage(os.Stdout)
		return 0
	}
	if args[0] == "help" {
		// help CMD [SUB]: the command's own -h.
		args = append(args[1:], "-h")
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "tokenmix: unknown command %q (tokenmix help lists them)\n", args[0])
		return 2
	}
	ctx, sig := context.Background(), (<-chan os.Signal)(nil)
	if cmd.graceful {
		var stop func()
		ctx, sig, stop = notifyContext()
		defer stop()
	}
	err = cmd.run(ctx, args[1:])
	var code int
	var ue usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
	case errors.As(err, &ue):
		code = 2
	default:
		code = 1
	}
	if s := received(sig); s != nil && !(cmd.drains && code == 0) {
		code = 128 + int(s.(syscall.Signal))
	}
	if code != 0 && err != nil && err != context.Canceled {
		// The library's errors carry the prefix already.
		fmt.Fprintln(os.Stderr, "tokenmix:", strings.TrimPrefix(err.Error(), "tokenmix: "))
	}
	return code
}

// notifyContext returns a context cancelled by the first SIGINT or SIGTERM,
// a channel that then holds that signal, and a stop function. After the
// first signal the default handling is restored, so a second one ends the
// process at once.
func notifyContext() (context.Context, <-chan os.Signal, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan os.Signal, 1)
	got := make(chan os.Signal, 1)
	signal.Notify(in, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-in
		if !ok {
			return
		}
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		got <- s
		cancel()
	}()
	return ctx, got, func() { signal.Stop(in); close(in); cancel() }
}

// received returns the signal on c, if one arrived.
func received(c <-chan os.Signal) os.Signal {
	select {
	case s := <-c:
		return s
	default:
		return nil
	}
}

// globalFlags consumes --threads N (or --threads=N) before the command.
func globalFlags(args []string) ([]string, error) {
	for len(args) > 0 {
		var v string
		switch a := args[0]; {
		case a == "--threads" || a == "-threads":
			if len(args) < 2 {
				return nil, fmt.Errorf("--threads needs a value")
			}
			v, args = args[1], args[2:]
		case strings.HasPrefix(a, "--threads=") || strings.HasPrefix(a, "-threads="):
			v, args = a[strings.IndexByte(a, '=')+1:], args[1:]
		default:
			return args, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--threads: want a positive integer, got %q", v)
		}
		parallel.SetThreads(n)
	}
	return args, nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tokenmix [--threads N] <command> [flags]\n\ncommands:")
	cs := commands()
	for _, n := range sortedNames(cs) {
		fmt.Fprintf(w, "  %-10s %s\n", n, cs[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'tokenmix help CMD' for a command's flags.")
	fmt.Fprintln(w, "The thread count defaults to GOMAXPROCS, or TOKENMIX_THREADS if set.")
}

func sortedNames(cs map[string]command) []string {
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// groups lists the commands that have sub-commands, with their lists.
func groups() map[string]func() map[string]command {
	return map[string]func() map[string]command{"bench": benchCommands, "tokenizer": tokenizerCommands}
}

// runGroup runs the sub-command args[0] of group (bench, tokenizer).
func runGroup(ctx context.Context, group, what string, args []string) error {
	cs := groups()[group]()
	names := strings.Join(sortedNames(cs), ", ")
	if len(args) == 0 {
		return usageErr("%s: want one of: %s (tokenmix help %s)", group, names, group)
	}
	if args[0] == "-h" || args[0] == "--help" {
		c := commands()[group]
		fmt.Printf("usage: tokenmix %s %s\n\n%s.\n\n%ss:\n", group, c.synopsis, upperFirst(c.summary), what)
		for _, n := range sortedNames(cs) {
			fmt.Fprintf(os.Stdout, "  %-8s %s\n", n, cs[n].summary)
		}
		fmt.Printf("\nRun 'tokenmix help %s NAME' for a %s's flags.\n", group, what)
		return errHelp
	}
	c, ok := cs[args[0]]
	if !ok {
		return usageErr("%s: unknown %s %q (want one of: %s)", group, what, args[0], names)
	}
	return c.run(ctx, args[1:])
}

// lookup returns the command of a flag set's name: "train" or "bench gemm".
func lookup(name string) command {
	if group, sub, ok := strings.Cut(name, " "); ok {
		return groups()[group]()[sub]
	}
	return commands()[name]
}

// newFlags returns the flag set of command name ("train", "bench gemm").
// Parse errors are returned, not printed; parseFlags prints the usage.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. On -h or --help it prints the command's
// usage to stdout and returns errHelp; a bad flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(os.Stdout, fs)
		return errHelp
	}
	if err != nil {
		return usageErr("%s: %v (tokenmix help %s)", fs.Name(), err, fs.Name())
	}
	return nil
}

// printUsage writes the command's synopsis, summary and flags.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	c := lookup(fs.Name())
	fmt.Fprintf(w, "usage: tokenmix %s %s\n\n%s.\n", fs.Name(), c.synopsis, upperFirst(c.summary))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// wantUsage is the usage error of a command called with missing or extra
// arguments: its synopsis.
func wantUsage(fs *flag.FlagSet) error {
	return usageErr("%s: want tokenmix %s %s", fs.Name(), fs.Name(), lookup(fs.Name()).synopsis)
}
