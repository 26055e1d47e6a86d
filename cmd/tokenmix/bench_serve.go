package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/serve"
)

// servePoint is one line of `tokenmix bench serve --json`.
type servePoint struct {
	Load        string  `json:"load"` // "classify", "completions" or "idle"
	Clients     int     `json:"clients,omitempty"`
	Batching    *bool   `json:"batching,omitempty"`
	Requests    int     `json:"requests,omitempty"`
	ReqPerSec   float64 `json:"req_per_s,omitempty"`
	P50Ms       float64 `json:"p50_ms,omitempty"`
	P99Ms       float64 `json:"p99_ms,omitempty"`
	TokensPerS  float64 `json:"tokens_per_s,omitempty"`
	CPUPercent  float64 `json:"cpu_percent_of_a_core,omitempty"`
	Rejected    int     `json:"rejected,omitempty"`
	DurationSec float64 `json:"duration_s"`
}

// runBenchServe is `tokenmix bench serve`: an in-process server on a
// loopback port under load from HTTP clients in the same process:
// classify requests/s and latency per client count with and without
// batching, completion tokens/s per stream count, and the idle server's
// CPU.
func runBenchServe(ctx context.Context, args []string) error {
	fs := newFlags("bench serve")
	var runs, cfgs runFlags
	fs.Var(&runs, "run", "a model to serve (repeat): the first classifier takes the classify load, the first causal lm the completions")
	fs.Var(&cfgs, "config", "or a model config with random weights (repeat)")
	clientsFlag := fs.String("clients", "1,8,64", "classify client counts")
	streamsFlag := fs.String("streams", "1,16", "completion stream counts")
	dur := fs.Duration("duration", 5*time.Second, "time per measurement")
	inLen := fs.Int("len", 128, "tokens per classify input")
	maxTokens := fs.Int("max-tokens", 64, "tokens per completion")
	idle := fs.Duration("idle", 10*time.Second, "time the idle server's CPU is measured over (0: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object per measurement")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	clientCounts, err1 := parseInts(*clientsFlag)
	streams, err2 := parseInts(*streamsFlag)
	if len(runs)+len(cfgs) == 0 || fs.NArg() > 0 || err1 != nil || err2 != nil || *dur <= 0 || *inLen < 1 || *maxTokens < 1 || *idle < 0 {
		return wantUsage(fs)
	}
	models := map[string]*tokenmix.Model{}
	var clsName, lmName string
	load := func(name, dir string) error {
		m, err := tokenmix.Load(dir)
		if err != nil {
			return err
		}
		models[name] = m
		c := m.Config()
		switch {
		case c.Task == "classify" && clsName == "":
			clsName = name
		case c.Task == "lm" && c.Causal && lmName == "":
			lmName = name
		}
		return nil
	}
	for i, r := range runs {
		if err := load("run"+strconv.Itoa(i), r); err != nil {
			return err
		}
	}
	for i, p := range cfgs {
		tmp, err := os.MkdirTemp("", "tokenmix-serve")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if err := randomModel(p, tmp); err != nil {
			return err
		}
		if err := load("config"+strconv.Itoa(i), tmp); err != nil {
			return err
		}
	}
	report := func(p servePoint) error {
		if *asJSON {
			return printJSON(p)
		}
		switch p.Load {
		case "classify":
			fmt.Printf("classify, %2d clients, batching %-5v: %7.1f req/s, p50 %6.2f ms, p99 %6.2f ms (%d requests, %d rejected)\n",
				p.Clients, *p.Batching, p.ReqPerSec, p.P50Ms, p.P99Ms, p.Requests, p.Rejected)
		case "completions":
			fmt.Printf("completions, %2d streams: %7.0f tokens/s (%d completions of up to %d tokens, p50 %.1f ms)\n", p.Clients, p.TokensPerS, p.Requests, *maxTokens, p.P50Ms)
		case "idle":
			fmt.Printf("idle server: %.2f%% of a core over %v\n", p.CPUPercent, *idle)
		}
		return nil
	}
	// The classify load, with batching (defaults) and without (one
	// request's sequences per pass).
	if clsName != "" {
		m := models[clsName]
		n, vocab := min(*inLen, m.Config().MaxLen), min(256, m.Config().VocabSize)
		for _, batching := range []bool{true, false} {
			cfg := serve.Config{Queue: 256}
			if !batching {
				cfg.MaxBatch = 1
			}
			for _, clients := range clientCounts {
				p, err := benchLoad(ctx, cfg, models, clients, *dur, func(c *http.Client, url string, rng *rand.Rand) (int, int, error) {
					text := make([]int32, n) // one per request: the clients run concurrently
					for i := range text {
						text[i] = int32(rng.IntN(vocab))
					}
					body, _ := json.Marshal(map[string]any{"model": clsName, "tokens": [][]int32{text}})
					return post(c, url+"/v1/classify", body)
				})
				if err != nil {
					return err
				}
				p.Load, p.Batching = "classify", &batching
				if err := report(p); err != nil {
					return err
				}
			}
		}
	}
	if lmName != "" {
		for _, n := range streams {
			cfg := serve.Config{Queue: 256, MaxStreams: max(n, 16), MaxNewTokens: *maxTokens}
			p, err := benchLoad(ctx, cfg, models, n, *dur, func(c *http.Client, url string, rng *rand.Rand) (int, int, error) {
				body, _ := json.Marshal(map[string]any{"model": lmName, "prompt": "The ", "max_tokens": *maxTokens,
					"temperature": 1, "seed": rng.Uint64(), "stream": true})
				return post(c, url+"/v1/completions", body)
			})
			if err != nil {
				return err
			}
			p.Load = "completions"
			if err := report(p); err != nil {
				return err
			}
		}
	}
	if *idle > 0 {
		s, _, err := startServer(serve.Config{}, models)
		if err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // past any start-up work
		c0, t0 := cpuTime(), time.Now()
		time.Sleep(*idle)
		c1, t1 := cpuTime(), time.Now()
		s.Shutdown(context.Background())
		if err := report(servePoint{Load: "idle", CPUPercent: 100 * float64(c1-c0) / float64(t1.Sub(t0)), DurationSec: t1.Sub(t0).Seconds()}); err != nil {
			return err
		}
	}
	return nil
}

// benchLoad runs n clients against a fresh server for d, each sending
// requests made by do, and returns the throughput and latencies of the
// 200s and the tokens their streams carried.
func benchLoad(ctx context.Context, cfg serve.Config, models map[string]*tokenmix.Model, n int, d time.Duration,
	do func(c *http.Client, url string, rng *rand.Rand) (code, tokens int, err error)) (servePoint, error) {
	s, url, err := startServer(cfg, models)
	if err != nil {
		return servePoint{}, err
	}
	defer s.Shutdown(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var lat []float64
	rejected, tokens := 0, 0
	var firstErr error
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for time.Now().Before(stop) && ctx.Err() == nil {
				t := time.Now()
				code, tk, err := do(client, url, rng)
				ms := float64(time.Since(t)) / 1e6
				mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				case code == 200:
					lat, tokens = append(lat, ms), tokens+tk
				case code == 429 || code == 503:
					rejected++
				default:
					if firstErr == nil {
						firstErr = fmt.Errorf("status %d", code)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if firstErr != nil {
		return servePoint{}, firstErr
	}
	if ctx.Err() != nil {
		return servePoint{}, ctx.Err()
	}
	slices.Sort(lat)
	p := servePoint{Clients: n, Requests: len(lat), Rejected: rejected, DurationSec: el, ReqPerSec: float64(len(lat)) / el,
		TokensPerS: float64(tokens) / el}
	if len(lat) > 0 {
		p.P50Ms, p.P99Ms = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return p, nil
}

// startServer serves models under cfg on a free loopback port and returns
// the server and its URL.
func startServer(cfg serve.Config, models map[string]*tokenmix.Model) (*serve.Server, string, error) {
	cfg.Addr = "127.0.0.1:0"
	s, err := serve.New(cfg, models)
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, "", err
	}
	go s.Serve(l)
	return s, "http://" + l.Addr().String(), nil
}

// post sends a JSON body and reads the whole response; for a stream of
// one choice it counts the tokens (every event but the last carries one).
func post(c *http.Client, url string, body []byte) (code, tokens int, err error) {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode == 200 && bytes.HasPrefix(b, []byte("data:")) {
		if !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			return 0, 0, fmt.Errorf("a stream without [DONE]")
		}
		tokens = bytes.Count(b, []byte("data: {")) - 1
	}
	return resp.StatusCode, tokens, err
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
