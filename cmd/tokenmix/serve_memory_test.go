package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/memstat"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/internal/run"
)

// serveOverhead is what the serve process may hold beyond its weights and
// its --max-memory: the Go runtime, the HTTP buffers, request bodies and
// answers, and the garbage between collections, which the server's soft
// memory limit (debug.SetMemoryLimit) keeps near this.
const serveOverhead = 96 << 20

// TestCLIServeMemoryBudget: a long-context lm served with --max-memory
// just above one request's plan, under 32 concurrent long prompts
// (scores, and completions streamed and not): every answer is 200, 429 or
// 503, the peak RSS stays under the budget plus the idle server's RSS
// (weights included) and serveOverhead, and afterwards every request
// succeeds. Without the budget the batcher would run the 16 scores as one
// pass of 16 times the plan.
func TestCLIServeMemoryBudget(t *testing.T) {
	const T = 2048
	cfg := fmt.Sprintf(`{"vocab_size": 256, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 256, "max_len": %d,
		"causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {"seed": 1}}`, T)
	dir := filepath.Join(t.TempDir(), "long")
	c, err := model.ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New[float32](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	d, err := run.Create(dir, []byte(cfg), run.Info{Task: "lm"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SaveTrainer(model.NewTrainer(m), run.State{Step: 1}, 1); err != nil {
		t.Fatal(err)
	}
	lm, err := tokenmix.Load(dir, tokenmix.WithThreads(2))
	if err != nil {
		t.Fatal(err)
	}
	const maxTokens = 8
	pass, state := lm.PassBytes(1, T), lm.StreamBytes(T)
	budget := pass + state + 1<<20 // one score's pass and one completion's state
	t.Logf("plan: a score pass %s, a completion's state %s; budget %s", memstat.FormatBytes(pass), memstat.FormatBytes(state), memstat.FormatBytes(budget))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(binary, "serve", "--run", "long="+dir, "--addr", addr, "--max-memory", strconv.FormatInt(budget, 10)+"B", "--timeout", "2m")
	cmd.Env = append(os.Environ(), "TOKENMIX_THREADS=2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	waitReady(t, client, addr, &stderr)
	status := func(key string) int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, key+":"); ok {
				f := strings.Fields(rest)
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
		t.Fatalf("no %s in /proc/%d/status", key, cmd.Process.Pid)
		return 0
	}
	idle := status("VmRSS")

	prompt := strings.Repeat("the quick brown fox jumps over the lazy dog. ", T/45+1)[:T-maxTokens-1]
	bodies := []string{
		fmt.Sprintf(`{"model": "long", "inputs": [%q]}`, prompt),
		fmt.Sprintf(`{"model": "long", "prompt": %q, "max_tokens": %d}`, prompt, maxTokens),
		fmt.Sprintf(`{"model": "long", "prompt": %q, "max_tokens": %d, "stream": true}`, prompt, maxTokens),
	}
	paths := []string{"/v1/score", "/v1/completions", "/v1/completions"}
	post := func(i int) (int, string) {
		resp, err := client.Post("http://"+addr+paths[i], "application/json", strings.NewReader(bodies[i]))
		if err != nil {
			t.Errorf("%s: %v", paths[i], err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := 0 // half scores, half completions
			if i%2 == 1 {
				k = 1 + i/2%2
			}
			code, body := post(k)
			mu.Lock()
			codes[code]++
			mu.Unlock()
			switch code {
			case 200, 429, 503:
			default:
				t.Errorf("%s: status %d: %s", paths[k], code, body)
			}
		}()
	}
	wg.Wait()
	peak := status("VmHWM")
	t.Logf("answers %v; RSS idle %s, peak %s (bound %s)", codes, memstat.FormatBytes(idle), memstat.FormatBytes(peak), memstat.FormatBytes(idle+budget+serveOverhead))
	if peak > idle+budget+serveOverhead {
		t.Errorf("peak RSS %s over the idle RSS %s + the budget %s + %s",
			memstat.FormatBytes(peak), memstat.FormatBytes(idle), memstat.FormatBytes(budget), memstat.FormatBytes(serveOverhead))
	}
	for k := range bodies {
		if code, body := post(k); code != 200 {
			t.Errorf("after the burst, %s: status %d: %s", paths[k], code, body)
		}
	}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`tokenmix_memory_in_use_bytes{model="long"}`, `tokenmix_memory_reserved_bytes{model="long"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
