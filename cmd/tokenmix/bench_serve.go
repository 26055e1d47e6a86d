package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench"
)

// runBenchServe is `tokenmix bench serve`: bench.Serve, an in-process
// server on a loopback port under load from HTTP clients in the same
// process: classify requests/s and latency per client count with and
// without batching, completion tokens/s per stream count, and the idle
// server's CPU. With --soak it is bench.Soak instead: mixed traffic
// against `tokenmix serve` in a child process, whose RSS, heap,
// goroutines and open fds must come back; it exits 1 when they do not.
func runBenchServe(ctx context.Context, args []string) error {
	fs := newFlags("bench serve")
	var runs, cfgs runFlags
	fs.Var(&runs, "run", "a model to serve (repeat): the first classifier takes the classify load, the first causal lm the completions")
	fs.Var(&cfgs, "config", "or a model config with random weights (repeat)")
	clientsFlag := fs.String("clients", "1,8,64", "classify and embeddings client counts (with --soak: one count, 16 when not given)")
	streamsFlag := fs.String("streams", "1,16", "completion stream counts")
	dur := fs.Duration("duration", 5*time.Second, "time per measurement")
	inLen := fs.Int("len", 128, "tokens per classify or embeddings input")
	maxTokens := fs.Int("max-tokens", 64, "tokens per completion")
	idle := fs.Duration("idle", 10*time.Second, "time the idle server's CPU is measured over (0: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object per measurement (with --soak: the summary)")
	soak := fs.Duration("soak", 0, "instead of the measurements, mixed traffic against a server in a child process for this long, checking its RSS, goroutines and open fds come back (exit 1 if not)")
	out := fs.String("out", filepath.Join("runs", "soak"), "with --soak: directory for soak.csv, soak.json, the plots and the server's log")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *soak > 0 {
		for _, name := range []string{"streams", "duration", "idle"} {
			if set[name] {
				return usageErr("bench serve: --%s is not used by --soak", name)
			}
		}
		clients := []int{16}
		var err error
		if set["clients"] {
			clients, err = parseInts(*clientsFlag)
		}
		if len(runs)+len(cfgs) == 0 || fs.NArg() > 0 || err != nil || len(clients) != 1 || *inLen < 1 || *maxTokens < 1 {
			return wantUsage(fs)
		}
		return bench.Soak(ctx, os.Stdout, bench.SoakOptions{Runs: runs, Configs: cfgs, Duration: *soak, Clients: clients[0],
			Len: *inLen, MaxTokens: *maxTokens, Out: *out, JSON: *asJSON})
	}
	if set["out"] || *soak < 0 {
		return usageErr("bench serve: --out is for --soak, which takes a positive duration")
	}
	clients, err1 := parseInts(*clientsFlag)
	streams, err2 := parseInts(*streamsFlag)
	if len(runs)+len(cfgs) == 0 || fs.NArg() > 0 || err1 != nil || err2 != nil || *dur <= 0 || *inLen < 1 || *maxTokens < 1 || *idle < 0 {
		return wantUsage(fs)
	}
	return bench.Serve(ctx, os.Stdout, bench.ServeOptions{Runs: runs, Configs: cfgs, Clients: clients, Streams: streams,
		Duration: *dur, Len: *inLen, MaxTokens: *maxTokens, Idle: *idle, JSON: *asJSON})
}
