package serve

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMemoryBudget: under MaxMemory, a stream reserves its planned state
// (the memory gauges show it); a completion that does not fit beside what
// others hold waits and gets 503 with Retry-After when its timeout passes
// first, and succeeds once the memory is free; one that cannot fit even
// alone gets 400.
func TestMemoryBudget(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	models := loadModels(t)
	fox := models["fox"]
	state := fox.StreamBytes(64)
	budget := 4 * state
	ts := start(t, Config{Timeout: 2 * time.Second, MaxMemory: budget}, models)
	g := newGate()
	ts.s.stepHook = g.hook()
	defer ts.stop(t)
	defer g.open()
	held := ts.streamReq(t, context.Background(), `{"model": "fox", "prompt": "the", "max_tokens": 5, "stream": true}`)
	resp, err := ts.client.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if v := metricValue(t, mb, `tokenmix_memory_reserved_bytes{model="fox"}`); v != float64(fox.StreamBytes(3+5)) {
		t.Errorf("reserved %v bytes, want the held stream's %d", v, fox.StreamBytes(3+5))
	}
	g.open()
	rb, _ := io.ReadAll(held.Body)
	held.Body.Close()
	if !strings.HasSuffix(string(rb), "data: [DONE]\n\n") {
		t.Errorf("held stream: %s", rb)
	}
	// A generation releases its state before its last event goes out.
	if v := ts.s.mem.reservedBytes(); v != 0 {
		t.Errorf("%d bytes still reserved once the stream has ended", v)
	}

	// Other requests hold the whole budget.
	if err := ts.s.mem.reserve(context.Background(), budget); err != nil {
		t.Fatal(err)
	}
	body := `{"model": "fox", "prompt": "the", "max_tokens": 5}`
	code, h, b := ts.post(t, "/v1/completions", body)
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "--max-memory") {
		t.Errorf("a completion while the budget is taken: %d, Retry-After %q: %s", code, h.Get("Retry-After"), b)
	}
	ts.s.mem.release(budget)
	if code, _, b := ts.post(t, "/v1/completions", body); code != 200 {
		t.Errorf("once the memory is free: %d %s", code, b)
	}
	resp, err = ts.client.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if v := metricValue(t, mb, `tokenmix_rejections_total{model="fox",reason="memory"}`); v != 1 {
		t.Errorf("memory rejections %v, want 1", v)
	}
	if v := metricValue(t, mb, `tokenmix_memory_reserved_bytes{model="fox"}`); v != 0 {
		t.Errorf("reserved %v bytes after the requests, want 0", v)
	}

	// A budget below one request's plan.
	small := start(t, Config{MaxMemory: state / 2}, models)
	defer small.stop(t)
	if code, _, b := small.post(t, "/v1/completions", body); code != 400 || !strings.Contains(string(b), "more than the server's budget") {
		t.Errorf("a completion that cannot fit: %d %s", code, b)
	}
}

// reservedBytes is what the pool has handed out.
func (p *memPool) reservedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserved
}
