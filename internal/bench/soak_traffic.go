package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// soakModel is one model of the server's GET /v1/models.
type soakModel struct {
	ID        string `json:"id"`
	Task      string `json:"task"`
	Causal    bool   `json:"causal"`
	MaxLen    int    `json:"max_len"`
	VocabSize int    `json:"vocab_size"`
}

// soakTarget is the server under soak and what its requests are made of.
type soakTarget struct {
	url, addr           string
	client              *http.Client
	cls, lm, emb, tag   *soakModel // the first of each kind served, or nil
	len, maxTokens      int        // tokens per classify, score, tag or embeddings input; per completion
	maxBody, maxHeaders int        // the server's caps, for requests just over them
}

// outcome is how one soak request ended: its status code, or "cancelled"
// (the client left on purpose) or "error" (no answer); ok when that is as
// designed for its kind, else err says why not.
type outcome struct {
	status string
	ok     bool
	err    error
}

// soakKind is one kind of soak traffic and its weight in the mix.
type soakKind struct {
	name   string
	weight int
	do     func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome
}

// soakKinds lists the kinds of traffic the served models allow: each
// endpoint's well-formed requests, streamed and not, clients that leave
// mid-stream or mid-request, slow readers and malformed requests.
func soakKinds(t *soakTarget) []soakKind {
	var ks []soakKind
	add := func(name string, weight int, do func(*soakTarget, context.Context, *rand.Rand) outcome) {
		ks = append(ks, soakKind{name, weight, do})
	}
	if t.cls != nil {
		add("classify", 3, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/classify", map[string]any{"model": t.cls.ID, "tokens": [][]int32{t.seq(t.cls, rng)}})
		})
	}
	if t.tag != nil {
		add("tag", 1, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/tag", map[string]any{"model": t.tag.ID, "tokens": [][]int32{t.seq(t.tag, rng)}})
		})
	}
	if t.emb != nil {
		add("embeddings", 2, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/embeddings", map[string]any{"model": t.emb.ID, "input": [][]int32{t.seq(t.emb, rng)}})
		})
	}
	if t.lm != nil {
		add("score", 2, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/score", map[string]any{"model": t.lm.ID, "tokens": [][]int32{t.seq(t.lm, rng)}})
		})
		add("completions", 2, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/completions", t.completion(rng, false))
		})
		add("completions stream", 3, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/completions", t.completion(rng, true))
		})
		add("chat", 2, func(t *soakTarget, ctx context.Context, rng *rand.Rand) outcome {
			return t.answered(ctx, "/v1/chat/completions", map[string]any{"model": t.lm.ID, "max_tokens": t.maxTokens,
				"messages": []map[string]string{{"role": "user", "content": "hello"}}, "seed": rng.Uint64(), "stream": rng.IntN(2) == 0})
		})
		add("disconnect", 2, (*soakTarget).disconnect)
		add("slow reader", 1, (*soakTarget).slowReader)
	}
	add("malformed", 3, (*soakTarget).malformed)
	add("abandoned", 1, (*soakTarget).abandoned)
	return ks
}

// seq is a random input for m of t.len tokens (at most m's max_len).
func (t *soakTarget) seq(m *soakModel, rng *rand.Rand) []int32 {
	s := make([]int32, max(2, min(t.len, m.MaxLen)))
	for i := range s {
		s[i] = int32(rng.IntN(min(256, m.VocabSize)))
	}
	return s
}

func (t *soakTarget) completion(rng *rand.Rand, stream bool) map[string]any {
	return map[string]any{"model": t.lm.ID, "prompt": "The ", "max_tokens": t.maxTokens, "temperature": 1,
		"seed": rng.Uint64(), "stream": stream}
}

// do sends a request with a JSON body (a []byte as it is, anything else
// marshalled).
func (t *soakTarget) do(ctx context.Context, method, path string, body any, header http.Header) (*http.Response, error) {
	b, ok := body.([]byte)
	if !ok && body != nil {
		b, _ = json.Marshal(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return t.client.Do(req)
}

// answered sends a well-formed request and reads the whole answer: 200
// (a stream ending in [DONE]) or 429 (the model's queue is full) are as
// designed.
func (t *soakTarget) answered(ctx context.Context, path string, body any) outcome {
	resp, err := t.do(ctx, http.MethodPost, path, body, nil)
	if err != nil {
		return outcome{status: "error", err: err}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	o := outcome{status: strconv.Itoa(resp.StatusCode)}
	switch {
	case err != nil:
		o.err = fmt.Errorf("%s: reading the answer: %v", path, err)
	case resp.StatusCode == http.StatusTooManyRequests:
		o.ok = true
	case resp.StatusCode != http.StatusOK:
		o.err = fmt.Errorf("%s: %d %s", path, resp.StatusCode, bytes.TrimSpace(b))
	case bytes.HasPrefix(b, []byte("data:")) && !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")):
		o.err = fmt.Errorf("%s: a stream without [DONE]: %q", path, tail(b))
	default:
		o.ok = true
	}
	return o
}

// disconnect leaves a completion early: half the time a stream after its
// first event, else a completion before its answer (the server then
// counts a 503, its answer to a cancelled request, which nobody reads).
func (t *soakTarget) disconnect(ctx context.Context, rng *rand.Rand) outcome {
	stream := rng.IntN(2) == 0
	var cancel context.CancelFunc
	if stream {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(1+rng.IntN(20))*time.Millisecond)
	}
	defer cancel()
	resp, err := t.do(ctx, http.MethodPost, "/v1/completions", t.completion(rng, stream), nil)
	switch {
	case err != nil && ctx.Err() != nil:
		return outcome{status: "cancelled", ok: true}
	case err != nil:
		return outcome{status: "error", err: err}
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	if code == http.StatusOK && stream {
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			return outcome{status: "error", err: fmt.Errorf("disconnect: reading the first event: %v", err)}
		}
		cancel()
		return outcome{status: "cancelled", ok: true}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if err != nil && ctx.Err() != nil {
		return outcome{status: "cancelled", ok: true}
	}
	if code != http.StatusOK && code != http.StatusTooManyRequests {
		return outcome{status: strconv.Itoa(code), err: fmt.Errorf("disconnect: %d", code)}
	}
	return outcome{status: strconv.Itoa(code), ok: true}
}

// slowReader reads a streamed completion 256 bytes at a time, 10 ms apart.
func (t *soakTarget) slowReader(ctx context.Context, rng *rand.Rand) outcome {
	resp, err := t.do(ctx, http.MethodPost, "/v1/completions", t.completion(rng, true), nil)
	if err != nil {
		return outcome{status: "error", err: err}
	}
	defer resp.Body.Close()
	o := outcome{status: strconv.Itoa(resp.StatusCode)}
	if resp.StatusCode == http.StatusTooManyRequests {
		o.ok = true
		return o
	}
	var got []byte
	buf := make([]byte, 256)
	for {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			o.err = fmt.Errorf("slow reader: %v", err)
			return o
		}
		time.Sleep(10 * time.Millisecond)
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		o.err = fmt.Errorf("slow reader: %d %s", resp.StatusCode, bytes.TrimSpace(got))
	case !bytes.HasSuffix(got, []byte("data: [DONE]\n\n")):
		o.err = fmt.Errorf("slow reader: a stream without [DONE]: %q", tail(got))
	default:
		o.ok = true
	}
	return o
}

// badRequest is one malformed request and the status it must get.
type badRequest struct {
	method, path string
	body         any
	header       http.Header
	want         int
}

// badRequests are the malformed requests for t's models: broken or
// oversized JSON, unknown fields, models and paths, inputs outside the
// vocabulary or over max_len, options out of range, a wrong method, and
// headers over the cap.
func (t *soakTarget) badRequests() []badRequest {
	m := t.cls
	for _, c := range []*soakModel{t.lm, t.emb, t.tag} {
		if m == nil {
			m = c
		}
	}
	var bs []badRequest
	post := func(path string, body any, want int) {
		bs = append(bs, badRequest{http.MethodPost, path, body, nil, want})
	}
	post("/v1/classify", []byte(`{"model": "`), 400)
	post("/v1/classify", []byte(`[1, 2]`), 400)
	post("/v1/classify", []byte{}, 400)
	post("/v1/classify", map[string]any{"model": "no-such-model", "tokens": [][]int32{{1}}}, 404)
	post("/v1/classify", []byte(`{"model": "x", "tokens": [[1]], "bogus": 1}`), 400)
	post("/v1/classify", bytes.Repeat([]byte(" "), t.maxBody+1), 413)
	post("/v1/nowhere", []byte(`{}`), 404)
	bs = append(bs, badRequest{http.MethodGet, "/v1/completions", nil, nil, 405},
		badRequest{http.MethodGet, "/v1/models", nil, http.Header{"X-Big": {strings.Repeat("x", 2*t.maxHeaders+4096)}}, 431})
	if m != nil {
		path := map[string]string{"classify": "/v1/classify", "lm": "/v1/score", "embed": "/v1/embeddings", "tag": "/v1/tag"}[m.Task]
		field := "tokens"
		if m.Task == "embed" {
			field = "input"
		}
		post(path, map[string]any{"model": m.ID, field: [][]int32{{int32(m.VocabSize), 1}}}, 400)
		post(path, map[string]any{"model": m.ID, field: [][]int32{make([]int32, m.MaxLen+1)}}, 400)
	}
	if t.lm != nil {
		post("/v1/completions", map[string]any{"model": t.lm.ID, "prompt": "a", "max_tokens": 1 << 20}, 400)
		post("/v1/completions", map[string]any{"model": t.lm.ID, "prompt": "a", "temperature": 5}, 400)
		post("/v1/completions", map[string]any{"model": t.lm.ID, "prompt": 7}, 400)
		post("/v1/chat/completions", map[string]any{"model": t.lm.ID, "messages": []map[string]string{{"role": "user", "content": "hi"}},
			"tools": []any{map[string]any{"type": "function"}}}, 400)
		post("/v1/classify", map[string]any{"model": t.lm.ID, "tokens": [][]int32{{1}}}, 400)
	}
	return bs
}

// malformed sends one of badRequests, which must get its 4xx.
func (t *soakTarget) malformed(ctx context.Context, rng *rand.Rand) outcome {
	bs := t.badRequests()
	b := bs[rng.IntN(len(bs))]
	resp, err := t.do(ctx, b.method, b.path, b.body, b.header)
	if err != nil {
		return outcome{status: "error", err: err}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	o := outcome{status: strconv.Itoa(resp.StatusCode), ok: resp.StatusCode == b.want}
	if !o.ok {
		o.err = fmt.Errorf("malformed %s %s: %d, want %d", b.method, b.path, resp.StatusCode, b.want)
	}
	return o
}

// abandoned opens a connection of its own, sends part of a request (its
// headers cut short, or its body) and closes it without an answer.
func (t *soakTarget) abandoned(ctx context.Context, rng *rand.Rand) outcome {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return outcome{status: "error", err: err}
	}
	defer c.Close()
	msg := "POST /v1/classify HTTP/1.1\r\nHost: soak\r\nContent-Le"
	if rng.IntN(2) == 0 {
		msg = "POST /v1/classify HTTP/1.1\r\nHost: soak\r\nContent-Length: 1000\r\n\r\n{\"model\": "
	}
	if _, err := io.WriteString(c, msg); err != nil {
		return outcome{status: "error", err: err}
	}
	time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	return outcome{status: "cancelled", ok: true}
}

// tail is the end of a body, for an error message.
func tail(b []byte) []byte { return b[max(0, len(b)-80):] }
