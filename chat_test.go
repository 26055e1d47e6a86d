package tokenmix_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix"
)

// colours is a toy chat task: the colour of a thing, asked in one of two
// ways, sometimes after a system message or an earlier exchange.
func colours() []tokenmix.Example {
	things := [][2]string{{"sky", "blue"}, {"grass", "green"}, {"snow", "white"}, {"coal", "black"}}
	var ex []tokenmix.Example
	for i := range 200 {
		q, a := things[i%4], things[(i/4)%4]
		ask := "colour of " + q[0] + "?"
		if i%3 == 0 {
			ask = "what colour is " + q[0] + "?"
		}
		var msgs []tokenmix.Message
		if i%5 == 0 {
			msgs = append(msgs, tokenmix.Message{Role: "system", Content: "answer in one word"})
		}
		if i%2 == 0 {
			msgs = append(msgs, tokenmix.Message{Role: "user", Content: "colour of " + a[0] + "?"}, tokenmix.Message{Role: "assistant", Content: a[1]})
		}
		msgs = append(msgs, tokenmix.Message{Role: "user", Content: ask}, tokenmix.Message{Role: "assistant", Content: q[1]})
		ex = append(ex, tokenmix.Example{Messages: msgs})
	}
	return ex
}

// chatRun trains a small chat lm on colours into dir.
func chatRun(t *testing.T, dir string) *tokenmix.Run {
	t.Helper()
	cfg := tokenmix.TrainConfig{DModel: 32, NHeads: 2, DFF: 64, Train: tokenmix.TrainSettings{Steps: 200, LR: 1e-2, Warmup: 20, Seed: 1}}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(colours()), tokenmix.WithOutDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestChat trains on conversations, whose assistant turns alone are
// scored, and answers through Model.Chat: the run records the template,
// and the reply stops at the template's stop.
func TestChat(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chat")
	r := chatRun(t, dir)
	c := r.Config()
	if c.Task != "lm" || !c.Causal || !strings.Contains(string(c.JSON), `"chat_template"`) {
		t.Fatalf("config: task %q, causal %v, %s", c.Task, c.Causal, c.JSON)
	}
	m, err := tokenmix.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{"colour of sky?": "blue", "what colour is coal?": "black", "colour of grass?": "green"} {
		res, err := m.Chat(context.Background(), []tokenmix.Message{{Role: "user", Content: q}}, tokenmix.GenerateOptions{MaxTokens: 20})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Text(res.Tokens); got != want || res.FinishReason != "stop" {
			t.Errorf("%s: reply %q (%s), want %q and a stop", q, got, res.FinishReason, want)
		}
	}
	p, stop, err := m.ChatPrompt([]tokenmix.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}})
	if err != nil || m.Text(p) != "<|system|>\ns\n<|user|>\nu\n<|assistant|>\n" || m.Text(stop) != "\n<|" {
		t.Errorf("ChatPrompt: %q, stop %q, %v", m.Text(p), m.Text(stop), err)
	}
	for _, bad := range [][]tokenmix.Message{nil, {{Role: "system", Content: "x"}}, {{Role: "", Content: "x"}}} {
		if _, err := m.Chat(context.Background(), bad, tokenmix.GenerateOptions{}); err == nil {
			t.Errorf("Chat(%v): no error", bad)
		}
	}
	os.RemoveAll(dir)
}
