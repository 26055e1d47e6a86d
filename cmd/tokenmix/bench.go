package main

import (
	"context"
	"sort"
	"strings"
)

// benchCommands is the list of `tokenmix bench` subcommands. Each lives in
// its own file bench_<name>.go.
func benchCommands() map[string]func(ctx context.Context, args []string) error {
	return map[string]func(ctx context.Context, args []string) error{
		"gemm":    runBenchGemm,
		"peak":    runBenchPeak,
		"scaling": runBenchScaling,
		"mixer":   runBenchMixer,
		"train":   runBenchTrain,
	}
}

func runBench(ctx context.Context, args []string) error {
	cs := benchCommands()
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return usageErr("bench: want one of: %s", strings.Join(names, ", "))
	}
	run, ok := cs[args[0]]
	if !ok {
		return usageErr("bench: unknown benchmark %q (want one of: %s)", args[0], strings.Join(names, ", "))
	}
	return run(ctx, args[1:])
}
