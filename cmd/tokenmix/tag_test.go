package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTagLines writes n JSONL lines {"text", "spans"}: a sentence of
// names (PER) and places (LOC) among common words, with byte offsets;
// some names have a multi-byte character.
func writeTagLines(t *testing.T, path string, n int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	per := strings.Fields("alice bob chloé dmitri eve")
	loc := strings.Fields("paris oslo zürich lima rome")
	common := strings.Fields("met in and saw the at from")
	var b strings.Builder
	for range n {
		var text strings.Builder
		var spans []map[string]any
		for w := range 4 + rng.IntN(4) {
			if w > 0 {
				text.WriteByte(' ')
			}
			word, label := common[rng.IntN(len(common))], ""
			switch rng.IntN(3) {
			case 0:
				word, label = per[rng.IntN(len(per))], "PER"
			case 1:
				word, label = loc[rng.IntN(len(loc))], "LOC"
			}
			if label != "" {
				spans = append(spans, map[string]any{"start": text.Len(), "end": text.Len() + len(word), "label": label})
			}
			text.WriteString(word)
		}
		line, _ := json.Marshal(map[string]any{"text": text.String(), "spans": spans})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTagCommands trains a tagger with `tokenmix train` on span lines (the
// config left to inference but for its steps), then tags lines with
// `tokenmix tag` (byte offsets, multi-byte characters included) and
// measures its spans with `tokenmix eval`.
func TestTagCommands(t *testing.T) {
	dir := t.TempDir()
	writeTagLines(t, filepath.Join(dir, "train.jsonl"), 400, 1)
	writeTagLines(t, filepath.Join(dir, "test.jsonl"), 100, 2)
	os.WriteFile(filepath.Join(dir, "c.json"), []byte(`{"mixer": {"kind": "aft_conv", "window": 15}, "train": {"steps": 300, "lr": 0.005}}`), 0o644)
	if r := cli(t, dir, "train", "--config", "c.json", "--data", "train.jsonl", "--out", "run"); r.code != 0 || !strings.Contains(r.stderr, `"task": "tag"`) {
		t.Fatalf("train: exit %d\n%s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("chloé met bob in zürich\nthe rome\n"), 0o644)
	r := cli(t, dir, "tag", "--run", "run", "--input", "in.txt")
	want := `{"spans":[{"start":0,"end":6,"label":"PER"` // chloé: 6 bytes
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("tag: exit %d, %q %s; want lines starting %s", r.code, r.stdout, r.stderr, want)
	}
	var lines [2]struct {
		Spans []struct {
			Start, End int
			Label      string
		}
	}
	for i, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		json.Unmarshal([]byte(l), &lines[i])
	}
	if got := fmt.Sprint(lines[0].Spans); got != "[{0 6 PER} {11 14 PER} {18 25 LOC}]" {
		t.Errorf("spans of line 1: %s", got)
	}
	if got := fmt.Sprint(lines[1].Spans); got != "[{4 8 LOC}]" {
		t.Errorf("spans of line 2: %s", got)
	}
	r = cli(t, dir, "eval", "--run", "run", "--data", "test.jsonl", "--json")
	var ev struct {
		Inputs, Spans         int
		Precision, Recall, F1 float64
	}
	if err := json.Unmarshal([]byte(r.stdout), &ev); err != nil || ev.Inputs != 100 || ev.F1 < 0.9 {
		t.Errorf("eval: %q %s (%v); want F1 ≥ 0.9 on 100 inputs", r.stdout, r.stderr, err)
	}
	t.Logf("eval: %+v", ev)
	if r := cli(t, dir, "tag", "--run", "run", "--input", "train.jsonl"); r.code != 0 {
		t.Errorf("tag on JSONL: exit %d %s", r.code, r.stderr)
	}
	if r := cli(t, dir, "predict", "--run", "run", "--input", "in.txt"); r.code != 0 || !strings.HasPrefix(r.stdout, want) {
		t.Errorf("predict on a tagger: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
}
