package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/bench/stat"
	"github.com/tokenmix/tokenmix/internal/serve"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	Runs, Configs []string      // models to serve: run directories, then configs with random weights (OpenModel)
	Clients       []int         // classify and embeddings client counts
	Streams       []int         // completion stream counts
	Duration      time.Duration // time per measurement
	Len           int           // tokens per classify or embeddings input
	MaxTokens     int           // tokens per completion
	Idle          time.Duration // time the idle server's CPU is measured over (0: skip)
	JSON          bool          // one JSON object per measurement instead of text lines
}

// servePoint is one line of `tokenmix bench serve --json`.
type servePoint struct {
	Load        string  `json:"load"` // "classify", "embeddings", "completions" or "idle"
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

// Serve serves the models of o from an in-process server on a loopback
// port and loads it from HTTP clients in the same process, writing one
// report line per measurement to w. Each measurement starts a fresh
// server and runs its clients for o.Duration, each client sending its
// next request as soon as the last one is answered:
//   - classify (the first classifier, if any) and embeddings (the first
//     embedder, if any): per client count, with
//     batching (the server's defaults) and without (one request's
//     sequences per pass), requests of one random sequence of o.Len
//     tokens; requests/s and the median and 99th-percentile latency of
//     the answered ones;
//   - completions (the first causal lm, if any): per stream count,
//     streamed completions of o.MaxTokens tokens at temperature 1;
//     tokens/s;
//   - idle (o.Idle > 0): the process's CPU time over o.Idle while a
//     server with every model waits, as a percentage of one core.
func Serve(ctx context.Context, w io.Writer, o ServeOptions) error {
	models := map[string]*tokenmix.Model{}
	var clsName, lmName, embName string
	load := func(name, dir, cfg string) error {
		m, err := OpenModel(dir, cfg)
		if err != nil {
			return err
		}
		models[name] = m
		c := m.Config()
		switch {
		case c.Task == "classify" && clsName == "":
			clsName = name
		case c.Task == "embed" && embName == "":
			embName = name
		case c.Task == "lm" && c.Causal && lmName == "":
			lmName = name
		}
		return nil
	}
	for i, r := range o.Runs {
		if err := load("run"+strconv.Itoa(i), r, ""); err != nil {
			return err
		}
	}
	for i, p := range o.Configs {
		if err := load("config"+strconv.Itoa(i), "", p); err != nil {
			return err
		}
	}
	report := func(p servePoint) error {
		if o.JSON {
			return json.NewEncoder(w).Encode(p)
		}
		switch p.Load {
		case "classify", "embeddings":
			fmt.Fprintf(w, "%s, %2d clients, batching %-5v: %7.1f req/s, p50 %6.2f ms, p99 %6.2f ms (%d requests, %d rejected)\n",
				p.Load, p.Clients, *p.Batching, p.ReqPerSec, p.P50Ms, p.P99Ms, p.Requests, p.Rejected)
		case "completions":
			fmt.Fprintf(w, "completions, %2d streams: %7.0f tokens/s (%d completions of up to %d tokens, p50 %.1f ms)\n", p.Clients, p.TokensPerS, p.Requests, o.MaxTokens, p.P50Ms)
		case "idle":
			fmt.Fprintf(w, "idle server: %.2f%% of a core over %v\n", p.CPUPercent, o.Idle)
		}
		return nil
	}
	// requests loads the model name's endpoint with requests of one
	// random sequence, with batching and without.
	requests := func(load, name, endpoint string, body func(seq []int32) any) error {
		m := models[name]
		n, vocab := min(o.Len, m.Config().MaxLen), min(256, m.Config().VocabSize)
		for _, batching := range []bool{true, false} {
			cfg := serve.Config{Queue: 256}
			if !batching {
				cfg.MaxBatch = 1
			}
			for _, clients := range o.Clients {
				p, err := serveLoad(ctx, cfg, models, clients, o.Duration, func(c *http.Client, url string, rng *rand.Rand) (int, int, error) {
					seq := make([]int32, n) // one per request: the clients run concurrently
					for i := range seq {
						seq[i] = int32(rng.IntN(vocab))
					}
					b, _ := json.Marshal(body(seq))
					return post(c, url+endpoint, b)
				})
				if err != nil {
					return err
				}
				p.Load, p.Batching = load, &batching
				if err := report(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if clsName != "" {
		if err := requests("classify", clsName, "/v1/classify", func(seq []int32) any {
			return map[string]any{"model": clsName, "tokens": [][]int32{seq}}
		}); err != nil {
			return err
		}
	}
	if embName != "" {
		if err := requests("embeddings", embName, "/v1/embeddings", func(seq []int32) any {
			return map[string]any{"model": embName, "input": [][]int32{seq}}
		}); err != nil {
			return err
		}
	}
	if lmName != "" {
		for _, n := range o.Streams {
			cfg := serve.Config{Queue: 256, MaxStreams: max(n, 16), MaxNewTokens: o.MaxTokens}
			p, err := serveLoad(ctx, cfg, models, n, o.Duration, func(c *http.Client, url string, rng *rand.Rand) (int, int, error) {
				body, _ := json.Marshal(map[string]any{"model": lmName, "prompt": "The ", "max_tokens": o.MaxTokens,
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
	if o.Idle > 0 {
		s, _, err := startServer(serve.Config{}, models)
		if err != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond) // past any start-up work
		c0, t0 := stat.ProcessCPU(), time.Now()
		time.Sleep(o.Idle)
		c1, t1 := stat.ProcessCPU(), time.Now()
		s.Shutdown(context.Background())
		if err := report(servePoint{Load: "idle", CPUPercent: 100 * float64(c1-c0) / float64(t1.Sub(t0)), DurationSec: t1.Sub(t0).Seconds()}); err != nil {
			return err
		}
	}
	return nil
}

// serveLoad runs n clients against a fresh server for d, each sending
// requests made by do, and returns the throughput and latencies of the
// 200s and the tokens their streams carried.
func serveLoad(ctx context.Context, cfg serve.Config, models map[string]*tokenmix.Model, n int, d time.Duration,
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
	p := servePoint{Clients: n, Requests: len(lat), Rejected: rejected, DurationSec: el, ReqPerSec: float64(len(lat)) / el,
		TokensPerS: float64(tokens) / el}
	if len(lat) > 0 {
		slices.Sort(lat)
		p.P50Ms, p.P99Ms = stat.Median(lat), lat[min(len(lat)-1, len(lat)*99/100)]
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
