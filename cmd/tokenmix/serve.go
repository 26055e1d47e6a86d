package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/serve"
)

// runFlags collects repeated --run NAME=DIR (or DIR) flags.
type runFlags []string

func (r *runFlags) String() string     { return strings.Join(*r, ",") }
func (r *runFlags) Set(v string) error { *r = append(*r, v); return nil }

// byteFlag is a size flag such as 1MiB.
type byteFlag struct{ n *int64 }

func (b byteFlag) String() string {
	if b.n == nil {
		return ""
	}
	return fmt.Sprint(*b.n)
}

func (b byteFlag) Set(v string) error {
	n, err := parseBytes(v)
	if err == nil && n < 1 {
		err = fmt.Errorf("want a positive size, got %q", v)
	}
	*b.n = n
	return err
}

// serveRuntimeBytes is what serve allows itself beyond the weights and
// --max-memory in its soft memory limit: the runtime, connections,
// request bodies and answers.
const serveRuntimeBytes = 64 << 20

// runServe is `tokenmix serve`: serve models over HTTP until SIGINT or
// SIGTERM, then drain and exit 0.
func runServe(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	var runs runFlags
	fs.Var(&runs, "run", "a model to serve, NAME=DIR or DIR (served as its directory's name); repeat for more")
	precision := fs.String("precision", "fp32", "precision of the models' matrix products: fp32, or bf16 (bf16 products, float32 sums)")
	d := serve.Defaults
	c := serve.Config{}
	fs.StringVar(&c.Addr, "addr", d.Addr, "address to listen on")
	fs.DurationVar(&c.BatchWindow, "batch-window", d.BatchWindow, "how long a classify or score batch waits for more requests")
	fs.IntVar(&c.MaxBatch, "max-batch", d.MaxBatch, "most sequences in one classify or score pass")
	fs.IntVar(&c.MaxStreams, "max-streams", d.MaxStreams, "most generations of one model stepped together")
	fs.IntVar(&c.Queue, "queue", d.Queue, "most requests one model admits at a time, waiting or running (429 beyond)")
	c.MaxBodyBytes = d.MaxBodyBytes
	fs.Var(byteFlag{&c.MaxBodyBytes}, "max-body", "cap on a request body, e.g. 1MiB (413 beyond)")
	fs.IntVar(&c.MaxInputs, "max-inputs", d.MaxInputs, "cap on inputs or prompts per request")
	fs.IntVar(&c.MaxInputTokens, "max-input-tokens", 0, "cap on tokens per input (0: the model's max_len)")
	fs.IntVar(&c.MaxNewTokens, "max-new-tokens", d.MaxNewTokens, "cap on a completion's max_tokens")
	fs.DurationVar(&c.Timeout, "timeout", d.Timeout, "most time one request's work may take")
	fs.DurationVar(&c.HeaderTimeout, "header-timeout", d.HeaderTimeout, "most time to read a request's headers")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", d.ReadTimeout, "most time to read a whole request")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", d.WriteTimeout, "most time to write a response (a stream, per event)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", d.IdleTimeout, "how long an idle keep-alive connection stays open")
	fs.IntVar(&c.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "cap on a request's headers")
	tokenFile := fs.String("token-file", "", "file holding the bearer token every request but the health checks must carry")
	fs.BoolVar(&c.InsecureBind, "insecure-bind", false, "allow a non-loopback --addr without --token-file")
	maxMemory := maxMemoryFlag(fs, "serve", "the memory requests may use beside the weights: pass workspaces and decoding states; a request that does not fit waits, then gets 503 (the default is measured after loading the models)")
	drain := fs.Duration("drain", 30*time.Second, "on SIGINT or SIGTERM, how long in-flight requests may take to finish")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(runs) == 0 || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	for _, v := range []struct {
		name string
		v    int
	}{{"max-batch", c.MaxBatch}, {"max-streams", c.MaxStreams}, {"queue", c.Queue}, {"max-inputs", c.MaxInputs},
		{"max-new-tokens", c.MaxNewTokens}, {"max-header-bytes", c.MaxHeaderBytes}} {
		if v.v < 1 {
			return usageErr("serve: --%s must be positive", v.name)
		}
	}
	if c.MaxInputTokens < 0 {
		return usageErr("serve: --max-input-tokens must be ≥ 0")
	}
	for _, v := range []time.Duration{c.BatchWindow, c.Timeout, c.HeaderTimeout, c.ReadTimeout, c.WriteTimeout, c.IdleTimeout, *drain} {
		if v <= 0 {
			return usageErr("serve: durations must be positive, got %v", v)
		}
	}
	if _, err := maxMemory(); err != nil { // a bad size before the models load
		return err
	}
	dirs := map[string]string{}
	for _, r := range runs {
		name, dir, ok := strings.Cut(r, "=")
		if !ok {
			name, dir = filepath.Base(filepath.Clean(r)), r
		}
		if name == "" || dir == "" {
			return usageErr("serve: --run %q: want NAME=DIR or DIR", r)
		}
		if _, dup := dirs[name]; dup {
			return usageErr("serve: two models named %q", name)
		}
		dirs[name] = dir
	}
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		if c.Token = strings.TrimSpace(string(b)); c.Token == "" {
			return fmt.Errorf("serve: the token file %s is empty", *tokenFile)
		}
	}
	models := map[string]*tokenmix.Model{}
	for name, dir := range dirs {
		m, err := tokenmix.Load(dir, tokenmix.WithPrecision(*precision))
		if err != nil {
			return fmt.Errorf("serve: model %q: %w", name, err)
		}
		models[name] = m
	}
	budget, err := maxMemory() // after loading: MemAvailable no longer counts the weights
	if err != nil {
		return err
	}
	c.MaxMemory = budget
	if budget > 0 && os.Getenv("GOMEMLIMIT") == "" {
		// The garbage between collections counts too: a soft limit at the
		// weights, the budget and the runtime's own keeps it near that.
		var weights int64
		for _, m := range models {
			weights += m.WeightBytes()
		}
		debug.SetMemoryLimit(weights + budget + serveRuntimeBytes)
	}
	c.Log = os.Stderr
	srv, err := serve.New(c, models)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Run() }()
	fmt.Fprintf(os.Stderr, "tokenmix serve: %d model(s) on http://%s\n", len(models), c.Addr)
	select {
	case err := <-errc: // could not listen
		srv.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	fmt.Fprintf(os.Stderr, "tokenmix serve: draining (up to %v)\n", *drain)
	dctx, cancel := context.WithTimeout(context.Background(), *drain)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		fmt.Fprintf(os.Stderr, "tokenmix serve: the drain deadline cut requests short: %v\n", err)
	}
	return <-errc
}
