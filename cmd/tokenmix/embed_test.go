package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix"
)

// TestEmbedCommands trains an embedder with `tokenmix train` on JSONL
// pairs, prints vectors with `tokenmix embed` (Model.Embed's, within
// 1e-6) and measures retrieval with `tokenmix eval --json`.
func TestEmbedCommands(t *testing.T) {
	dir := t.TempDir()
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa")
	var b strings.Builder
	for i := range 300 {
		w := words[i%len(words)] + " " + words[(i*7+i/16)%len(words)]
		up := strings.ToUpper(w)
		line, _ := json.Marshal(map[string]string{"text": w, "positive": up})
		b.Write(append(line, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "pairs.jsonl"), []byte(b.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"train": {"steps": 150, "batch_size": 16, "lr": 0.003}}`), 0o644)
	if r := cli(t, dir, "train", "--config", "c.json", "--data", "pairs.jsonl", "--out", "run"); r.code != 0 || !strings.Contains(r.stderr, `"task": "embed"`) {
		t.Fatalf("train: exit %d\n%s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("alpha bravo\nKILO LIMA\n"), 0o644)
	r := cli(t, dir, "embed", "--run", "run", "--input", "in.txt")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 {
		t.Fatalf("embed: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	m, err := tokenmix.Load(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Embed(context.Background(), [][]int32{m.Encode("alpha bravo"), m.Encode("KILO LIMA")})
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range lines {
		var got struct{ Embedding []float32 }
		if err := json.Unmarshal([]byte(l), &got); err != nil || len(got.Embedding) != len(want[i]) {
			t.Fatalf("line %d: %q (%v)", i, l, err)
		}
		for k := range want[i] {
			if math.Abs(float64(got.Embedding[k]-want[i][k])) > 1e-6 {
				t.Fatalf("line %d, dimension %d: %v, Model.Embed %v", i, k, got.Embedding[k], want[i][k])
			}
		}
	}
	r = cli(t, dir, "eval", "--run", "run", "--data", "pairs.jsonl", "--json")
	var ev struct {
		Inputs    int
		RecallAt1 float64 `json:"recall_at_1"`
		MRR       float64 `json:"mrr"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev.Inputs != 300 || ev.RecallAt1 < 0.5 || ev.MRR < ev.RecallAt1 {
		t.Errorf("eval: %q %s (%v)", r.stdout, r.stderr, err)
	}
	t.Logf("eval on the training pairs: %+v", ev)
}
