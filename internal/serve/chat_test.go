package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/nodetest"
)

// TestChatCompletions: /v1/chat/completions gives the reply Model.Chat
// gives with the same seed, with its log-probabilities and usage;
// streamed, the chunks carry the role first, then the same text, the
// finish reason, the usage and [DONE].
func TestChatCompletions(t *testing.T) {
	defer goleak.VerifyNone(t, leakOpts...)
	models := loadModels(t)
	ts := start(t, Config{}, models)
	defer ts.stop(t)
	fox := models["fox"]
	msgs := []tokenmix.Message{{Role: "system", Content: "be"}, {Role: "user", Content: "The quick"}}
	want, err := fox.Chat(context.Background(), msgs, tokenmix.GenerateOptions{MaxTokens: 12, Temperature: 0.8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model": "fox", "messages": [{"role": "system", "content": "be"}, {"role": "user", "content": [{"type": "text", "text": "The "}, {"type": "text", "text": "quick"}]}],
	 "max_tokens": 12, "temperature": 0.8, "seed": 7, "logprobs": true, "top_logprobs": 1}`
	code, _, b := ts.post(t, "/v1/chat/completions", body)
	if code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	var resp chatCompletion
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	prompt, _, _ := fox.ChatPrompt(msgs)
	c := resp.Choices[0]
	switch {
	case resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") || len(resp.Choices) != 1:
		t.Errorf("response %s", b)
	case c.Message == nil || c.Message.Role != "assistant" || c.Message.Content == nil || *c.Message.Content != fox.Text(want.Tokens):
		t.Errorf("message %+v, want %q", c.Message, fox.Text(want.Tokens))
	case *c.FinishReason != finishReason(want.FinishReason):
		t.Errorf("finish reason %q, want %q", *c.FinishReason, want.FinishReason)
	case resp.Usage == nil || resp.Usage.PromptTokens != len(prompt) || resp.Usage.CompletionTokens != len(want.Tokens):
		t.Errorf("usage %+v, want %d prompt and %d completion tokens", resp.Usage, len(prompt), len(want.Tokens))
	case c.Logprobs == nil || len(c.Logprobs.Content) != len(want.Tokens):
		t.Fatalf("logprobs %+v", c.Logprobs)
	}
	for i, lp := range c.Logprobs.Content {
		if lp.Logprob != want.LogProbs[i] || len(lp.TopLogprobs) != 1 || len(lp.Bytes) == 0 {
			t.Errorf("token %d: %+v, want log-probability %v and one top token", i, lp, want.LogProbs[i])
		}
	}

	// Streamed.
	stream := strings.Replace(body, `"seed": 7`, `"seed": 7, "stream": true, "stream_options": {"include_usage": true}`, 1)
	code, _, b = ts.post(t, "/v1/chat/completions", stream)
	if code != 200 {
		t.Fatalf("stream: status %d: %s", code, b)
	}
	var chunks []chatCompletion
	sc := bufio.NewScanner(bytes.NewReader(b))
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ch chatCompletion
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		chunks = append(chunks, ch)
	}
	if !done || len(chunks) < 3 {
		t.Fatalf("stream: %d chunks, [DONE] %v:\n%s", len(chunks), done, b)
	}
	var text strings.Builder
	var finish string
	for i, ch := range chunks {
		if ch.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d: object %q", i, ch.Object)
		}
		if i == 0 && (ch.Choices[0].Delta == nil || ch.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first chunk %+v: no role", ch.Choices[0])
		}
		if len(ch.Choices) == 1 {
			if d := ch.Choices[0].Delta; d != nil && d.Content != nil {
				text.WriteString(*d.Content)
			}
			if f := ch.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
	}
	last := chunks[len(chunks)-1]
	if text.String() != fox.Text(want.Tokens) || finish != finishReason(want.FinishReason) || last.Usage == nil || last.Usage.CompletionTokens != len(want.Tokens) {
		t.Errorf("stream: text %q, finish %q, usage %+v; want %q, %q", text.String(), finish, last.Usage, fox.Text(want.Tokens), want.FinishReason)
	}
}

// TestOpenAIClient drives /v1/chat/completions, streamed and not, and
// /v1/completions with the official OpenAI Node SDK (v4,
// scripts/openai_client.mjs): the same seed gives the reply Model.Chat
// gives. It runs where TOKENMIX_NODE_MODULES names a node_modules
// directory holding openai@4 (.ci/run installs one).
func TestOpenAIClient(t *testing.T) {
	node, modules := nodetest.Modules(t)
	models := loadModels(t)
	models["emb"] = embedder(t)
	ts := start(t, Config{}, models)
	defer ts.stop(t)
	out, err := exec.Command(node, "../../scripts/openai_client.mjs", ts.url, "fox", modules, "emb").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the client: %v\n%s", err, stderr)
	}
	var got struct {
		Chat, Role, Finish                 string
		Logprobs                           []float32
		Usage                              usage
		Streamed, StreamRole, StreamFinish string
		StreamUsage                        *usage
		Completion                         string
		Models                             [][]any
		Embeddings                         [][]float32
		EmbeddingTokens                    int
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	fox := models["fox"]
	want, err := fox.Chat(context.Background(), []tokenmix.Message{{Role: "system", Content: "be"}, {Role: "user", Content: "The quick"}},
		tokenmix.GenerateOptions{MaxTokens: 12, Temperature: 0.8, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	text := fox.Text(want.Tokens)
	t.Logf("the OpenAI client got %q (%s), streamed %q, completion %q", got.Chat, got.Finish, got.Streamed, got.Completion)
	switch {
	case got.Chat != text || got.Streamed != text || got.Completion != text:
		t.Errorf("chat %q, streamed %q, completion %q; Model.Chat %q", got.Chat, got.Streamed, got.Completion, text)
	case got.Role != "assistant" || got.StreamRole != "assistant":
		t.Errorf("roles %q, %q", got.Role, got.StreamRole)
	case got.Finish != finishReason(want.FinishReason) || got.StreamFinish != got.Finish:
		t.Errorf("finish %q, streamed %q; want %q", got.Finish, got.StreamFinish, want.FinishReason)
	case !slices.Equal(got.Logprobs, want.LogProbs):
		t.Errorf("logprobs %v, want %v", got.Logprobs, want.LogProbs)
	case got.Usage.CompletionTokens != len(want.Tokens) || got.StreamUsage == nil || *got.StreamUsage != got.Usage:
		t.Errorf("usage %+v, streamed %+v", got.Usage, got.StreamUsage)
	case len(got.Models) != 3:
		t.Errorf("models %v", got.Models)
	}
	emb := models["emb"]
	wantEmb, err := emb.Embed(context.Background(), [][]int32{emb.Encode("alpha bravo"), emb.Encode("kilo")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Embeddings) != 2 || got.EmbeddingTokens != len("alpha bravo")+len("kilo") {
		t.Fatalf("embeddings: %d vectors, %d tokens", len(got.Embeddings), got.EmbeddingTokens)
	}
	for i := range wantEmb {
		for k := range wantEmb[i] {
			if k >= len(got.Embeddings[i]) || math.Abs(float64(got.Embeddings[i][k]-wantEmb[i][k])) > 1e-6 {
				t.Fatalf("embedding %d: the client got %v, Model.Embed %v", i, got.Embeddings[i], wantEmb[i])
			}
		}
	}
}
