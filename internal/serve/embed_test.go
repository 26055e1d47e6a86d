package serve

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix"
)

// embedder trains a small embedder on pairs of a word and its reverse.
func embedder(t *testing.T) *tokenmix.Model {
	t.Helper()
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa")
	var ex []tokenmix.Example
	for i := range 200 {
		w := words[i%len(words)] + " " + words[(i*7)%len(words)]
		r := []rune(w)
		for a, b := 0, len(r)-1; a < b; a, b = a+1, b-1 {
			r[a], r[b] = r[b], r[a]
		}
		ex = append(ex, tokenmix.Example{Text: w, Positive: string(r)})
	}
	cfg := tokenmix.TrainConfig{DModel: 32, NHeads: 2, DFF: 64, Train: tokenmix.TrainSettings{Steps: 60, BatchSize: 16, LR: 3e-3}}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(ex))
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestEmbeddings: /v1/embeddings in OpenAI's shape gives Model.Embed's
// vectors (within 1e-6), as floats or base64, for a string, strings or
// token arrays, with usage; bad requests are 400s that name the problem.
func TestEmbeddings(t *testing.T) {
	models := loadModels(t)
	m := embedder(t)
	models["emb"] = m
	ts := start(t, Config{}, models)
	defer ts.stop(t)
	texts := []string{"alpha bravo", "ovarb ahpla", "kilo"}
	want, err := m.Embed(context.Background(), [][]int32{m.Encode(texts[0]), m.Encode(texts[1]), m.Encode(texts[2])})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		body string
		idx  []int
	}{
		{`{"model": "emb", "input": "alpha bravo"}`, []int{0}},
		{`{"model": "emb", "input": ["alpha bravo", "ovarb ahpla", "kilo"]}`, []int{0, 1, 2}},
		{`{"model": "emb", "input": ["alpha bravo", "ovarb ahpla", "kilo"], "encoding_format": "base64"}`, []int{0, 1, 2}},
		{fmt.Sprintf(`{"model": "emb", "input": %s}`, ids(m.Encode("kilo"))), []int{2}},
		{fmt.Sprintf(`{"model": "emb", "input": [%s, %s], "dimensions": 32}`, ids(m.Encode("kilo")), ids(m.Encode("alpha bravo"))), []int{2, 0}},
	} {
		code, _, b := ts.post(t, "/v1/embeddings", c.body)
		var resp struct {
			Object, Model string
			Data          []struct {
				Object    string
				Index     int
				Embedding json.RawMessage
			}
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}
		if code != 200 || json.Unmarshal(b, &resp) != nil || resp.Object != "list" || resp.Model != "emb" || len(resp.Data) != len(c.idx) {
			t.Fatalf("%s: %d %s", c.body, code, b)
		}
		for k, d := range resp.Data {
			var got []float32
			if strings.Contains(c.body, "base64") {
				var s string
				json.Unmarshal(d.Embedding, &s)
				raw, _ := base64.StdEncoding.DecodeString(s)
				for o := 0; o+4 <= len(raw); o += 4 {
					got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[o:])))
				}
			} else {
				json.Unmarshal(d.Embedding, &got)
			}
			w := want[c.idx[k]]
			if d.Object != "embedding" || d.Index != k || len(got) != len(w) {
				t.Fatalf("%s: item %d: %s, %d values", c.body, k, d.Object, len(got))
			}
			for i := range w {
				if math.Abs(float64(got[i]-w[i])) > 1e-6 {
					t.Fatalf("%s: item %d, dimension %d: %v, Model.Embed %v", c.body, k, i, got[i], w[i])
				}
			}
		}
		if resp.Usage.PromptTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens {
			t.Errorf("%s: usage %+v", c.body, resp.Usage)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{"model": "spam", "input": "a"}`, "embeddings need an embedder"},
		{`{"model": "emb"}`, `missing "input"`},
		{`{"model": "emb", "input": 3}`, `"input": want a string`},
		{`{"model": "emb", "input": [""]}`, "input 0"},
		{`{"model": "emb", "input": "a", "encoding_format": "int8"}`, "encoding_format"},
		{`{"model": "emb", "input": "a", "dimensions": 8}`, "dimensions"},
		{`{"model": "emb", "input": [[1, 300]]}`, "vocabulary"},
	} {
		code, _, b := ts.post(t, "/v1/embeddings", c.body)
		var e apiError
		if code != 400 || json.Unmarshal(b, &e) != nil || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s, want a 400 naming %q", c.body, code, b, c.want)
		}
	}
}
