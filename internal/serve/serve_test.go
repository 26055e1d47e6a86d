package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tokenmix/tokenmix"
)

// The example models: spam (a classifier, full attention, pad_id 256) and
// fox (a causal byte-level lm, aft_simple, max_len 64).
const spamDir, foxDir = "../../testdata/spam", "../../testdata/fox"

// goroutines that outlive a server by design: the kernels' thread pool.
var leakOpts = []goleak.Option{
	// The kernels' worker pool is process-wide and long-lived: it parks
	// when idle and serves every later call.
	goleak.IgnoreAnyFunction("github.com/tokenmix/tokenmix/internal/parallel.(*worker).loop"),
}

func loadModels(t testing.TB) map[string]*tokenmix.Model {
	t.Helper()
	ms := map[string]*tokenmix.Model{}
	for name, dir := range map[string]string{"spam": spamDir, "fox": foxDir} {
		m, err := tokenmix.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		ms[name] = m
	}
	return ms
}

// testServer is a Server on a loopback port and a client for it.
type testServer struct {
	s      *Server
	url    string
	client *http.Client
	done   chan error
}

func start(t testing.TB, cfg Config, models map[string]*tokenmix.Model) *testServer {
	t.Helper()
	s, err := New(cfg, models)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{s: s, url: "http://" + l.Addr().String(), done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	go func() { ts.done <- s.Serve(l) }()
	return ts
}

// stop shuts the server down and checks that Serve returned and no
// goroutine is left.
func (ts *testServer) stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	ts.client.CloseIdleConnections()
}

// post sends body to path and returns the status and response body.
func (ts *testServer) post(t testing.TB, path, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// TestBadInput: malformed requests of every kind get the right 4xx and a
// JSON error, never a 5xx; the server is fine afterwards.
func TestBadInput(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	ts := start(t, Config{MaxBodyBytes: 4096, MaxInputs: 4, MaxInputTokens: 32, MaxNewTokens: 20}, loadModels(t))
	defer ts.stop(t)
	deep := strings.Repeat("[", 1500) + strings.Repeat("]", 1500)
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string // in the error message
	}{
		{"bad JSON", "POST", "/v1/classify", `{"model": "spam", "inputs": [`, 400, "ends inside"},
		{"syntax error", "POST", "/v1/classify", `{"model": "spam" "inputs": []}`, 400, "invalid JSON"},
		{"empty body", "POST", "/v1/classify", ``, 400, "empty"},
		{"not an object", "POST", "/v1/classify", `[1, 2]`, 400, "JSON object"},
		{"two values", "POST", "/v1/classify", `{"model": "spam", "inputs": ["a"]} {}`, 400, "more than one"},
		{"wrong type", "POST", "/v1/classify", `{"model": "spam", "inputs": "hello"}`, 400, `"inputs"`},
		{"wrong token type", "POST", "/v1/classify", `{"model": "spam", "tokens": [[1, "a"]]}`, 400, `"tokens`},
		{"fractional token", "POST", "/v1/score", `{"model": "fox", "tokens": [[1, 2.5]]}`, 400, `"tokens`},
		{"unknown field", "POST", "/v1/classify", `{"model": "spam", "inputs": ["a"], "temperature": 1}`, 400, `"temperature"`},
		{"unsupported completion field", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "n": 2}`, 400, `"n"`},
		{"unknown model", "POST", "/v1/classify", `{"model": "nosuch", "inputs": ["a"]}`, 404, "nosuch"},
		{"missing model", "POST", "/v1/classify", `{"inputs": ["a"]}`, 400, `"model"`},
		{"missing inputs", "POST", "/v1/classify", `{"model": "spam"}`, 400, `"inputs"`},
		{"inputs and tokens", "POST", "/v1/classify", `{"model": "spam", "inputs": ["a"], "tokens": [[1]]}`, 400, "not both"},
		{"no inputs", "POST", "/v1/classify", `{"model": "spam", "inputs": []}`, 400, "no inputs"},
		{"empty input", "POST", "/v1/classify", `{"model": "spam", "inputs": [""]}`, 400, "input 0"},
		{"token out of vocabulary", "POST", "/v1/classify", `{"model": "spam", "tokens": [[1, 257]]}`, 400, "vocabulary"},
		{"negative token", "POST", "/v1/score", `{"model": "fox", "tokens": [[-1, 2]]}`, 400, "vocabulary"},
		{"too long", "POST", "/v1/classify", `{"model": "spam", "inputs": ["` + strings.Repeat("a", 33) + `"]}`, 400, "--max-input-tokens"},
		{"too many inputs", "POST", "/v1/classify", `{"model": "spam", "inputs": ["a", "b", "c", "d", "e"]}`, 400, "--max-inputs"},
		{"body over the cap", "POST", "/v1/classify", `{"model": "spam", "inputs": ["` + strings.Repeat("a", 5000) + `"]}`, 413, "--max-body"},
		{"deep nesting", "POST", "/v1/classify", `{"model": "spam", "inputs": ` + deep + `}`, 400, ""},
		{"classify on an lm", "POST", "/v1/classify", `{"model": "fox", "inputs": ["a"]}`, 400, "classifier"},
		{"score on a classifier", "POST", "/v1/score", `{"model": "spam", "inputs": ["ab"]}`, 400, "causal language model"},
		{"score of one token", "POST", "/v1/score", `{"model": "fox", "inputs": ["a"]}`, 400, "at least 2"},
		{"completion on a classifier", "POST", "/v1/completions", `{"model": "spam", "prompt": "a"}`, 400, "causal language model"},
		{"missing prompt", "POST", "/v1/completions", `{"model": "fox"}`, 400, `"prompt"`},
		{"empty prompt", "POST", "/v1/completions", `{"model": "fox", "prompt": ""}`, 400, "prompt 0"},
		{"prompt of a number", "POST", "/v1/completions", `{"model": "fox", "prompt": 7}`, 400, `"prompt"`},
		{"prompt too long", "POST", "/v1/completions", `{"model": "fox", "prompt": "` + strings.Repeat("a", 40) + `"}`, 400, "--max-input-tokens"},
		{"max_tokens over the cap", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "max_tokens": 21}`, 400, "--max-new-tokens"},
		{"max_tokens zero", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "max_tokens": 0}`, 400, "max_tokens"},
		{"temperature out of range", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "temperature": 3}`, 400, "temperature"},
		{"top_p out of range", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "top_p": 0}`, 400, "top_p"},
		{"logprobs 5", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "logprobs": 5}`, 400, "logprobs"},
		{"negative seed", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "seed": -1}`, 400, `"seed"`},
		{"empty stop", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "stop": [""]}`, 400, "stop"},
		{"stop of a number", "POST", "/v1/completions", `{"model": "fox", "prompt": "a", "stop": 3}`, 400, "stop"},
		{"tag on a classifier", "POST", "/v1/tag", `{"model": "spam", "inputs": ["a"]}`, 400, "tag needs a tagger"},
		{"tag on an lm", "POST", "/v1/tag", `{"model": "fox", "inputs": ["a"]}`, 400, "tag needs a tagger"},
		{"tag without inputs", "POST", "/v1/tag", `{"model": "fox"}`, 400, "tagger"},
		{"chat on a classifier", "POST", "/v1/chat/completions", `{"model": "spam", "messages": [{"role": "user", "content": "a"}]}`, 400, "causal language model"},
		{"chat without messages", "POST", "/v1/chat/completions", `{"model": "fox"}`, 400, `"messages"`},
		{"chat of no messages", "POST", "/v1/chat/completions", `{"model": "fox", "messages": []}`, 400, "messages: empty"},
		{"chat without a user turn", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "system", "content": "a"}]}`, 400, "no user turn"},
		{"chat without a role", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"content": "a"}]}`, 400, "messages[0]: no role"},
		{"chat role with a line break", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "us\ner", "content": "a"}]}`, 400, "line break"},
		{"chat content of a number", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": 3}]}`, 400, "messages[0].content"},
		{"chat image part", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`, 400, "only text parts"},
		{"chat with tools", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "tools": [{"type": "function"}]}`, 400, "tools"},
		{"chat with n 2", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "n": 2}`, 400, "n = 2"},
		{"chat with response_format", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "response_format": {"type": "json_object"}}`, 400, "response_format"},
		{"chat top_logprobs without logprobs", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "top_logprobs": 1}`, 400, "top_logprobs"},
		{"chat top_logprobs 5", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "logprobs": true, "top_logprobs": 5}`, 400, "top_logprobs"},
		{"chat logprobs of a number", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "logprobs": 1}`, 400, "logprobs"},
		{"chat too long", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "` + strings.Repeat("a", 30) + `"}]}`, 400, "rendered messages"},
		{"chat both max tokens", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "max_tokens": 2, "max_completion_tokens": 2}`, 400, "not both"},
		{"chat max_tokens over the cap", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "max_tokens": 21}`, 400, "--max-new-tokens"},
		{"chat unknown field", "POST", "/v1/chat/completions", `{"model": "fox", "messages": [{"role": "user", "content": "a"}], "best_of": 2}`, 400, "best_of"},
		{"wrong method", "GET", "/v1/classify", ``, 405, "POST"},
		{"wrong method on models", "POST", "/v1/models", `{}`, 405, "GET"},
		{"unknown path", "GET", "/v2/nothing", ``, 404, "/v2/nothing"},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, ts.url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e apiError
		switch {
		case resp.StatusCode != c.status:
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, b)
		case json.Unmarshal(b, &e) != nil || e.Error.Message == "" || e.Error.Type == "":
			t.Errorf("%s: not a JSON error: %s", c.name, b)
		case !strings.Contains(e.Error.Message, c.want):
			t.Errorf("%s: message %q does not name %q", c.name, e.Error.Message, c.want)
		case resp.Header.Get("X-Request-Id") == "":
			t.Errorf("%s: no X-Request-Id", c.name)
		}
	}
	if code, _, b := ts.post(t, "/v1/classify", `{"model": "spam", "inputs": ["still serving"]}`); code != 200 {
		t.Errorf("after the bad requests: %d %s", code, b)
	}
}

// TestCheckBind: a non-loopback address needs a token or InsecureBind.
func TestCheckBind(t *testing.T) {
	for _, c := range []struct {
		addr            string
		token, insecure bool
		ok              bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"[::1]:8080", false, false, true},
		{"localhost:8080", false, false, true},
		{":8080", false, false, false},
		{"0.0.0.0:8080", false, false, false},
		{"0.0.0.0:8080", true, false, true},
		{"10.1.2.3:80", false, true, true},
		{"nonsense", true, true, false},
	} {
		if err := checkBind(c.addr, c.token, c.insecure); (err == nil) != c.ok {
			t.Errorf("checkBind(%q, token %v, insecure %v) = %v", c.addr, c.token, c.insecure, err)
		}
	}
}

// TestAuth: with a token, every endpoint but the health checks needs it.
func TestAuth(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	ts := start(t, Config{Token: "s3cret"}, loadModels(t))
	defer ts.stop(t)
	body := `{"model": "spam", "inputs": ["hello"]}`
	if code, h, _ := ts.post(t, "/v1/classify", body); code != 401 || h.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d", code)
	}
	if code, _, _ := ts.post(t, "/v1/classify", body, "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	if code, _, b := ts.post(t, "/v1/classify", body, "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("right token: %d %s", code, b)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 401, "/v1/models": 401} {
		resp, err := ts.client.Get(ts.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without a token: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// completionResp parses a completions response, streamed or not, into
// per-choice tokens, texts and finish reasons.
type completionResp struct {
	tokens  [][]int32
	texts   []string
	reasons []string
	done    bool // a stream ended with [DONE]
}

func parseCompletion(t testing.TB, b []byte, n int, streamed bool) completionResp {
	t.Helper()
	r := completionResp{tokens: make([][]int32, n), texts: make([]string, n), reasons: make([]string, n)}
	add := func(c completion) {
		for _, ch := range c.Choices {
			if ch.Index < 0 || ch.Index >= n {
				t.Fatalf("choice index %d of %d", ch.Index, n)
			}
			r.texts[ch.Index] += ch.Text
			if ch.Logprobs != nil {
				r.tokens[ch.Index] = append(r.tokens[ch.Index], ch.Logprobs.Tokens...)
			}
			if ch.FinishReason != nil {
				r.reasons[ch.Index] = *ch.FinishReason
			}
		}
	}
	if !streamed {
		var c completion
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		add(c)
		return r
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			r.done = true
			continue
		}
		var c completion
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Object != "text_completion" {
			t.Fatalf("event %q: %v", line, err)
		}
		add(c)
	}
	return r
}

// direct is what the API gives for a completion request served alone.
func direct(t testing.TB, m *tokenmix.Model, prompt string, o tokenmix.GenerateOptions) (*tokenmix.Result, string) {
	t.Helper()
	res, err := m.Generate(context.Background(), m.Encode(prompt), o)
	if err != nil {
		t.Fatal(err)
	}
	return res, m.Text(res.Tokens)
}

// near reports whether a and b agree within tol·(1+|b|) everywhere.
func near(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol*(1+math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}

// TestLoad: 64 concurrent clients mix classify, score and streamed and
// unstreamed completions. Every response is 200 (or a designed 429/503),
// every 200 equals a direct API call with the same inputs and seed, the
// batches hold several requests, and no goroutine is left after shutdown.
func TestLoad(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	models := loadModels(t)
	ts := start(t, Config{}, models)
	clients, per := 64, 6
	if testing.Short() {
		per = 2
	}
	texts := []string{"win a free prize", "lunch at noon?", "URGENT: claim your reward", "the quick brown fox", "minutes of the meeting"}
	type outcome struct{ ok, rejected int }
	var mu sync.Mutex
	var total outcome
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				var got outcome
				k := (c + i) % 4
				txt := texts[(c*7+i)%len(texts)]
				switch k {
				case 0, 1: // classify (spam) or score (fox)
					path, model := "/v1/classify", "spam"
					if k == 1 {
						path, model = "/v1/score", "fox"
					}
					inputs := []string{txt, texts[(c+i+1)%len(texts)]}[:1+(c+i)%2]
					body, _ := json.Marshal(map[string]any{"model": model, "inputs": inputs})
					code, _, b := ts.post(t, path, string(body))
					if code != 200 {
						if code == 429 || code == 503 {
							got.rejected++
							break
						}
						t.Errorf("%s: %d %s", path, code, b)
						return
					}
					seqs := make([][]int32, len(inputs))
					for j, s := range inputs {
						seqs[j] = models[model].Encode(s)
					}
					if k == 0 {
						var resp struct{ Results []tokenmix.Prediction }
						want, err := models[model].Classify(context.Background(), seqs)
						if err != nil || json.Unmarshal(b, &resp) != nil || len(resp.Results) != len(want) {
							t.Errorf("classify: %v %s", err, b)
							return
						}
						for j := range want {
							if resp.Results[j].Label != want[j].Label || !near(resp.Results[j].Probs, want[j].Probs, 1e-6) {
								t.Errorf("classify %q: served %+v, direct %+v", inputs[j], resp.Results[j], want[j])
							}
						}
					} else {
						var resp struct{ Results []tokenmix.Score }
						want, err := models[model].Score(context.Background(), seqs)
						if err != nil || json.Unmarshal(b, &resp) != nil || len(resp.Results) != len(want) {
							t.Errorf("score: %v %s", err, b)
							return
						}
						for j := range want {
							if !near(resp.Results[j].LogProbs, want[j].LogProbs, 1e-6) {
								t.Errorf("score %q: served %v, direct %v", inputs[j], resp.Results[j].LogProbs, want[j].LogProbs)
							}
						}
					}
					got.ok++
				default: // a completion, unstreamed (2) or streamed (3)
					seed := uint64(c*1000 + i)
					streamed := k == 3
					req := map[string]any{"model": "fox", "prompt": txt, "max_tokens": 6 + (c+i)%10, "temperature": 0.9,
						"top_p": 0.95, "seed": seed, "stream": streamed, "logprobs": 0, "stop": []string{"zz"}}
					body, _ := json.Marshal(req)
					code, _, b := ts.post(t, "/v1/completions", string(body))
					if code != 200 {
						if code == 429 || code == 503 {
							got.rejected++
							break
						}
						t.Errorf("completions: %d %s", code, b)
						return
					}
					r := parseCompletion(t, b, 1, streamed)
					want, wantText := direct(t, models["fox"], txt, tokenmix.GenerateOptions{MaxTokens: 6 + (c+i)%10,
						Temperature: 0.9, TopP: 0.95, Seed: seed, Stop: [][]int32{models["fox"].Encode("zz")}})
					switch {
					case streamed && !r.done:
						t.Errorf("stream without [DONE]: %s", b)
					case fmt.Sprint(r.tokens[0]) != fmt.Sprint(want.Tokens) || r.texts[0] != wantText:
						t.Errorf("completion seed %d: served %v %q, direct %v %q", seed, r.tokens[0], r.texts[0], want.Tokens, wantText)
					case r.reasons[0] != finishReason(want.FinishReason):
						t.Errorf("completion seed %d: finish %q, direct %q", seed, r.reasons[0], want.FinishReason)
					}
					got.ok++
				}
				mu.Lock()
				total.ok += got.ok
				total.rejected += got.rejected
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total.ok < clients*per/2 {
		t.Errorf("%d of %d requests served (%d rejected)", total.ok, clients*per, total.rejected)
	}
	// Batches held more than one sequence.
	resp, err := ts.client.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	count, sum := metricValue(t, metrics, `tokenmix_batch_sequences_count{model="spam"}`), metricValue(t, metrics, `tokenmix_batch_sequences_sum{model="spam"}`)
	if count == 0 || sum/count <= 1.05 {
		t.Errorf("classify batches: %v sequences in %v passes", sum, count)
	}
	if metricValue(t, metrics, `tokenmix_generated_tokens_total{model="fox"}`) == 0 {
		t.Errorf("no generated tokens counted")
	}
	t.Logf("%d served, %d rejected; classify batches of %.2f sequences on average", total.ok, total.rejected, sum/count)
	ts.stop(t)
}

// metricValue reads one sample of a Prometheus text exposition.
func metricValue(t testing.TB, text []byte, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(string(text), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	t.Errorf("no metric %s", name)
	return 0
}

// streamReq starts a streamed completion and returns its response once
// the headers have arrived (the caller reads and closes the body).
func (ts *testServer) streamReq(t testing.TB, ctx context.Context, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// gate blocks generation steps until opened.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate         { return &gate{ch: make(chan struct{})} }
func (g *gate) wait()        { <-g.ch }
func (g *gate) open()        { g.once.Do(func() { close(g.ch) }) }
func (g *gate) hook() func() { return g.wait }

// TestQueueFull: a model with all its slots taken answers 429 with
// Retry-After, and serves again once they free up.
func TestQueueFull(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	ts := start(t, Config{Queue: 2, Timeout: 5 * time.Second}, loadModels(t))
	g := newGate()
	ts.s.stepHook = g.hook()
	defer ts.stop(t)
	defer g.open()
	body := `{"model": "fox", "prompt": "the", "max_tokens": 5, "stream": true}`
	var held []*http.Response
	for range 2 {
		held = append(held, ts.streamReq(t, context.Background(), body))
	}
	code, h, b := ts.post(t, "/v1/completions", body)
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(string(b), "--queue") {
		t.Errorf("third request: %d, Retry-After %q: %s", code, h.Get("Retry-After"), b)
	}
	// Other models keep their own slots.
	if code, _, b := ts.post(t, "/v1/classify", `{"model": "spam", "inputs": ["hi"]}`); code != 200 {
		t.Errorf("another model while fox is full: %d %s", code, b)
	}
	g.open()
	for _, r := range held {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !strings.HasSuffix(string(b), "data: [DONE]\n\n") {
			t.Errorf("held stream: %s", b)
		}
	}
	if code, _, b := ts.post(t, "/v1/completions", body); code != 200 {
		t.Errorf("after the slots freed: %d %s", code, b)
	}
}

// TestDrain: during Shutdown, streams in flight finish with [DONE], new
// requests and /readyz get 503, and Shutdown returns once they are done.
func TestDrain(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	ts := start(t, Config{}, loadModels(t))
	ts.s.stepHook = func() { time.Sleep(3 * time.Millisecond) }
	var streams []*http.Response
	for i := range 4 {
		streams = append(streams, ts.streamReq(t, context.Background(),
			fmt.Sprintf(`{"model": "fox", "prompt": "once upon %d", "max_tokens": 40, "temperature": 0, "stream": true}`, i)))
	}
	// Each stream has begun: read its first event.
	readers := make([]*bufio.Reader, len(streams))
	for i, r := range streams {
		readers[i] = bufio.NewReader(r.Body)
		if line, err := readers[i].ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
			t.Fatalf("stream %d: %q %v", i, line, err)
		}
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- ts.s.Shutdown(ctx)
	}()
	for !ts.s.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	if code, _, b := ts.post(t, "/v1/classify", `{"model": "spam", "inputs": ["late"]}`); code != 503 {
		t.Errorf("a new request while draining: %d %s", code, b)
	}
	if resp, err := ts.client.Get(ts.url + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Errorf("/readyz while draining: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for i, rd := range readers {
		rest, err := io.ReadAll(rd)
		streams[i].Body.Close()
		if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(string(rest), `"finish_reason":"length"`) {
			t.Errorf("stream %d did not finish: %v %q", i, err, rest)
		}
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	ts.client.CloseIdleConnections()
}

// TestClientGone: a client that goes away mid-stream stops its
// generation at the next token; a request past its timeout gets 504.
func TestClientGone(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	ts := start(t, Config{Timeout: 300 * time.Millisecond}, loadModels(t))
	ts.s.stepHook = func() { time.Sleep(5 * time.Millisecond) }
	defer ts.stop(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := ts.streamReq(t, ctx, `{"model": "fox", "prompt": "a", "max_tokens": 60, "stream": true}`)
	if line, err := bufio.NewReader(r.Body).ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("first event: %q %v", line, err)
	}
	cancel()
	r.Body.Close()
	time.Sleep(100 * time.Millisecond)
	tokens := func() float64 {
		resp, err := ts.client.Get(ts.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return metricValue(t, b, `tokenmix_generated_tokens_total{model="fox"}`)
	}
	n := tokens()
	time.Sleep(100 * time.Millisecond)
	if m := tokens(); m != n || n >= 60 {
		t.Errorf("after the client left: %v tokens, then %v", n, m)
	}
	// 60 tokens at 5 ms or more each outlast the 300 ms timeout.
	code, _, b := ts.post(t, "/v1/completions", `{"model": "fox", "prompt": "a", "max_tokens": 60}`)
	if code != 504 || !strings.Contains(string(b), "--timeout") {
		t.Errorf("past the timeout: %d %s", code, b)
	}
}

// TestSlowHeaders: a client that sends its headers slowly is cut off after
// the header timeout, one with oversized headers gets 431, and other
// clients are served meanwhile.
func TestSlowHeaders(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	// net/http lingers 500 ms before closing a connection it answered 431.
	defer time.Sleep(time.Second)
	ts := start(t, Config{HeaderTimeout: 300 * time.Millisecond, MaxHeaderBytes: 4096}, loadModels(t))
	defer ts.stop(t)
	addr := strings.TrimPrefix(ts.url, "http://")
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	t0 := time.Now()
	fmt.Fprint(slow, "POST /v1/classify HTTP/1.1\r\nHost: x\r\n")
	go func() { // one more header byte now and then
		for range 50 {
			time.Sleep(50 * time.Millisecond)
			if _, err := slow.Write([]byte("X")); err != nil {
				return
			}
		}
	}()
	if code, _, b := ts.post(t, "/v1/classify", `{"model": "spam", "inputs": ["meanwhile"]}`); code != 200 {
		t.Errorf("another client during the slow one: %d %s", code, b)
	}
	// Closed: EOF, or a reset when a header byte reached the server after
	// it had closed (or was unread when it did), which a loaded machine
	// makes likely; a read that runs into the deadline is not closed.
	_ = slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(slow); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the slow connection was not closed: %v", err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("the slow connection lasted %v", d)
	}
	big, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	fmt.Fprintf(big, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 16<<10))
	line, _ := bufio.NewReader(big).ReadString('\n')
	if !strings.Contains(line, "431") {
		t.Errorf("oversized headers: %q", line)
	}
}
