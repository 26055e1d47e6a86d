package main

import (
	"context"
	"os"
	"time"

	"github.com/tokenmix/tokenmix/internal/bench"
)

// runBenchServe is `tokenmix bench serve`: bench.Serve, an in-process
// server on a loopback port under load from HTTP clients in the same
// process: classify requests/s and latency per client count with and
// without batching, completion tokens/s per stream count, and the idle
// server's CPU.
func runBenchServe(ctx context.Context, args []string) error {
	fs := newFlags("bench serve")
	var runs, cfgs runFlags
	fs.Var(&runs, "run", "a model to serve (repeat): the first classifier takes the classify load, the first causal lm the completions")
	fs.Var(&cfgs, "config", "or a model config with random weights (repeat)")
	clientsFlag := fs.String("clients", "1,8,64", "classify and embeddings client counts")
	streamsFlag := fs.String("streams", "1,16", "completion stream counts")
	dur := fs.Duration("duration", 5*time.Second, "time per measurement")
	inLen := fs.Int("len", 128, "tokens per classify or embeddings input")
	maxTokens := fs.Int("max-tokens", 64, "tokens per completion")
	idle := fs.Duration("idle", 10*time.Second, "time the idle server's CPU is measured over (0: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object per measurement")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	clients, err1 := parseInts(*clientsFlag)
	streams, err2 := parseInts(*streamsFlag)
	if len(runs)+len(cfgs) == 0 || fs.NArg() > 0 || err1 != nil || err2 != nil || *dur <= 0 || *inLen < 1 || *maxTokens < 1 || *idle < 0 {
		return wantUsage(fs)
	}
	return bench.Serve(ctx, os.Stdout, bench.ServeOptions{Runs: runs, Configs: cfgs, Clients: clients, Streams: streams,
		Duration: *dur, Len: *inLen, MaxTokens: *maxTokens, Idle: *idle, JSON: *asJSON})
}
