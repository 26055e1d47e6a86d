package tokenmix

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/data"
)

// TestStreamEqualsLogits: a stream of MaxTokens n, fed a text of n tokens
// in uneven pieces, gives after each piece the logits a forward pass over
// the whole text gives at that position (LSH hashes into buckets counted
// from the length, so the stream's MaxTokens is the text's length).
func TestStreamEqualsLogits(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []string{lmCfg, convCfg, lshLMCfg} {
		m, err := Load(tinyRun(t, cfg, nil))
		if err != nil {
			t.Fatal(err)
		}
		text := m.Encode("abracadabra, said the cat")
		all, err := m.Logits(ctx, [][]int32{text})
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewStream(StreamOptions{MaxTokens: len(text)})
		if err != nil {
			t.Fatal(err)
		}
		for pos, n := 0, 1; pos < len(text); pos, n = pos+n, n%3+1 {
			n = min(n, len(text)-pos)
			got, err := s.Append(ctx, text[pos:pos+n]...)
			if err != nil {
				t.Fatal(err)
			}
			want := all.Data[(pos+n-1)*256 : (pos+n)*256]
			if r := maxRel(got, want); r > 1e-5 {
				t.Fatalf("%s: after %d tokens the stream's logits differ by %.3g", m.Config().Mixer, pos+n, r)
			}
		}
		if s.CacheBytes() == 0 {
			t.Errorf("%s: the stream reports no state bytes", m.Config().Mixer)
		}
	}
}

// TestGenerateGreedy: at temperature 0 each token is the argmax of a full
// forward pass over the prefix; top-k 1 at any temperature is the same.
func TestGenerateGreedy(t *testing.T) {
	ctx := context.Background()
	m, err := Load(tinyRun(t, lmCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Encode("once upon")
	res, err := m.Generate(ctx, prompt, GenerateOptions{MaxTokens: 12})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tokens) != 12 || res.FinishReason != "length" {
		t.Fatalf("%d tokens, finish %q", len(res.Tokens), res.FinishReason)
	}
	seq := slices.Clone(prompt)
	for i, tok := range res.Tokens {
		lg, err := m.Logits(ctx, [][]int32{seq})
		if err != nil {
			t.Fatal(err)
		}
		row := lg.Data[(len(seq)-1)*256 : len(seq)*256]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		sorted := slices.Clone(row)
		slices.Sort(sorted)
		if int(tok) != best && sorted[255]-sorted[254] > 1e-5 {
			t.Errorf("token %d: %d, argmax %d", i, tok, best)
		}
		if want := data.LogSoftmaxAt(row, int(tok)); math.Abs(float64(res.LogProbs[i])-want) > 1e-4 {
			t.Errorf("token %d: log-prob %v, want %v", i, res.LogProbs[i], want)
		}
		seq = append(seq, tok)
	}
	k1, err := m.Generate(ctx, prompt, GenerateOptions{MaxTokens: 12, Temperature: 1.7, TopK: 1, Seed: 9})
	if err != nil || !slices.Equal(k1.Tokens, res.Tokens) {
		t.Errorf("top-k 1: %v, %v; greedy %v", k1.Tokens, err, res.Tokens)
	}
}

// TestGenerateSampling: the same seed repeats the same tokens, another seed
// differs, and max_len ends generation.
func TestGenerateSampling(t *testing.T) {
	ctx := context.Background()
	m, err := Load(tinyRun(t, lmCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	o := GenerateOptions{MaxTokens: 20, Temperature: 1, TopP: 0.95, Seed: 1}
	a, _ := m.Generate(ctx, []int32{1, 2}, o)
	b, _ := m.Generate(ctx, []int32{1, 2}, o)
	o.Seed = 2
	c, _ := m.Generate(ctx, []int32{1, 2}, o)
	if !slices.Equal(a.Tokens, b.Tokens) || slices.Equal(a.Tokens, c.Tokens) {
		t.Errorf("seed 1 twice: %v, %v; seed 2: %v", a.Tokens, b.Tokens, c.Tokens)
	}
	long, err := m.Generate(ctx, []int32{1, 2, 3}, GenerateOptions{})
	if err != nil || long.FinishReason != "max_len" || len(long.Tokens) != 40-3 {
		t.Errorf("until max_len: %d tokens, %q, %v", len(long.Tokens), long.FinishReason, err)
	}
}

// TestTopP: on a known distribution top-p keeps the smallest set of most
// probable tokens whose mass reaches p, in proportion.
func TestTopP(t *testing.T) {
	probs := []float64{0.05, 0.5, 0.15, 0.3}
	logits := make([]float32, len(probs))
	for i, p := range probs {
		logits[i] = float32(math.Log(p))
	}
	for _, c := range []struct {
		p    float64
		want []float64 // expected frequency per token
	}{
		{0.5, []float64{0, 1, 0, 0}},
		{0.7, []float64{0, 0.5 / 0.8, 0, 0.3 / 0.8}},
		{0.9, []float64{0, 0.5 / 0.95, 0.15 / 0.95, 0.3 / 0.95}},
		{1, probs},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		n := make([]float64, 4)
		const draws = 20000
		for range draws {
			id, _, _, _ := sample(logits, GenerateOptions{Temperature: 1, TopP: c.p}, rng)
			n[id]++
		}
		for i := range n {
			if math.Abs(n[i]/draws-c.want[i]) > 0.015 {
				t.Errorf("top-p %v: token %d drawn %.3f of the time, want %.3f", c.p, i, n[i]/draws, c.want[i])
			}
		}
	}
}

// TestGenerateStop: a stop sequence ends the output and is not part of it,
// nor of what OnToken saw.
func TestGenerateStop(t *testing.T) {
	ctx := context.Background()
	m, err := Load(tinyRun(t, lmCfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	free, err := m.Generate(ctx, []int32{5}, GenerateOptions{MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	stop := free.Tokens[3:5] // stops at its first occurrence, at or before 3
	first := 0
	for first+2 <= len(free.Tokens) && !slices.Equal(free.Tokens[first:first+2], stop) {
		first++
	}
	var seen []int32
	res, err := m.Generate(ctx, []int32{5}, GenerateOptions{MaxTokens: 10, Stop: [][]int32{{99, 98, 97}, stop},
		OnToken: func(tk Token) error { seen = append(seen, tk.ID); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "stop" || !slices.Equal(res.Tokens, free.Tokens[:first]) || !slices.Equal(seen, res.Tokens) {
		t.Errorf("stop %v: %v (%s), OnToken saw %v; free run %v", stop, res.Tokens, res.FinishReason, seen, free.Tokens)
	}
	boom := errors.New("boom")
	if _, err := m.Generate(ctx, []int32{5}, GenerateOptions{MaxTokens: 3, OnToken: func(Token) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("OnToken's error: %v", err)
	}
}

func TestStreamErrors(t *testing.T) {
	ctx := context.Background()
	cls, _ := Load(tinyRun(t, clsCfg, nil))
	lm, _ := Load(tinyRun(t, lmCfg, nil))
	s, _ := lm.NewStream(StreamOptions{MaxTokens: 4})
	small, _ := lm.NewStream(StreamOptions{CacheBytes: 100})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"classifier", func() error { _, err := cls.NewStream(StreamOptions{}); return err }(), "streams need a causal lm"},
		{"max tokens", func() error { _, err := lm.NewStream(StreamOptions{MaxTokens: 41}); return err }(), "MaxTokens 41 outside [0, max_len=40]"},
		{"no tokens", func() error { _, err := s.Append(ctx); return err }(), "Append with no tokens"},
		{"vocabulary", func() error { _, err := s.Append(ctx, 1, 300); return err }(), "token 300 at position 1 outside the vocabulary"},
		{"too long", func() error { _, err := s.Append(ctx, 1, 2, 3, 4, 5); return err }(), "more than its 4"},
		{"cache", func() error { _, err := small.Append(ctx, 1, 2, 3); return err }(), "more than its CacheBytes 100"},
		{"cache sticks", func() error { _, err := small.Append(ctx, 1); return err }(), "more than its CacheBytes 100"},
		{"cancelled", func() error { _, err := s.Append(cancelled, 1); return err }(), "context canceled"},
		{"empty prompt", func() error { _, err := lm.Generate(ctx, nil, GenerateOptions{}); return err }(), "prompt of at least one token"},
		{"temperature", func() error { _, err := lm.Generate(ctx, []int32{1}, GenerateOptions{Temperature: -1}); return err }(), "Temperature -1"},
		{"top-p", func() error { _, err := lm.Generate(ctx, []int32{1}, GenerateOptions{TopP: 2}); return err }(), "TopP 2"},
		{"empty stop", func() error { _, err := lm.Generate(ctx, []int32{1}, GenerateOptions{Stop: [][]int32{{}}}); return err }(), "Stop[0] is empty"},
		{"full prompt", func() error { _, err := lm.Generate(ctx, make([]int32, 40), GenerateOptions{}); return err }(), "leaves no room"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, c.err, c.want)
		}
	}
}

// TestStepStreams: stepping streams together equals appending to each
// alone, within 1e-6, for a kind that decodes in batches, one that decodes
// one stream at a time (entmax) and LSH, whose state has no batched step.
func TestStepStreams(t *testing.T) {
	ctx := context.Background()
	entmaxCfg := strings.Replace(lmCfg, `{"kind": "full"}`, `{"kind": "entmax"}`, 1)
	for _, cfg := range []string{lmCfg, convCfg, entmaxCfg, lshLMCfg} {
		m, err := Load(tinyRun(t, cfg, nil))
		if err != nil {
			t.Fatal(err)
		}
		var together, alone []*Stream
		for i := range 4 {
			prompt := m.Encode(strings.Repeat("ab", i+1))
			for _, l := range []*[]*Stream{&together, &alone} {
				s, _ := m.NewStream(StreamOptions{})
				if _, err := s.Append(ctx, prompt...); err != nil {
					t.Fatal(err)
				}
				*l = append(*l, s)
			}
		}
		for step := range 3 {
			next := []int32{int32(10 + step), 20, 30, int32(40 + step)}
			got, err := m.StepStreams(ctx, together, next)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range alone {
				want, err := s.Append(ctx, next[i])
				if err != nil {
					t.Fatal(err)
				}
				if r := maxRel(got[i], want); r > 1e-6 {
					t.Errorf("%s: step %d stream %d differs by %.3g", m.Config().Mixer, step, i, r)
				}
			}
		}
		if _, err := m.StepStreams(ctx, []*Stream{together[0], together[0]}, []int32{1, 2}); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Errorf("a stream twice: %v", err)
		}
	}
}

// TestStopLongest: when the output ends with two stop sequences, the
// longer is left out.
func TestStopLongest(t *testing.T) {
	out := []int32{1, 2, 3}
	for _, stops := range [][][]int32{{{3}, {2, 3}}, {{2, 3}, {3}}} {
		if n := stopAt(out, stops); n != 1 {
			t.Errorf("stops %v: output cut at %d, want 1", stops, n)
		}
	}
	if n := stopAt(out, [][]int32{{4}, {1, 3}}); n != -1 {
		t.Errorf("no stop matches: %d", n)
	}
}

// TestPadIDStream: a causal lm with pad_id streams through its prefix (the
// decoders do not exclude pad keys as Forward does), and still equals a
// forward pass at every position, pad tokens fed included.
func TestPadIDStream(t *testing.T) {
	cfg := strings.Replace(lmCfg, `"vocab_size": 256`, `"vocab_size": 257, "pad_id": 256`, 1)
	m, err := Load(tinyRun(t, cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := []int32{5, 256, 7, 8, 256, 9}
	all, _ := m.Logits(ctx, [][]int32{text})
	s, _ := m.NewStream(StreamOptions{})
	for pos, tok := range text {
		got, err := s.Append(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if r := maxRel(got, all.Data[pos*257:(pos+1)*257]); r > 1e-6 {
			t.Fatalf("position %d differs by %.3g", pos, r)
		}
	}
}

// TestStepGenerations: generations stepped together draw the tokens that
// Generate draws alone with the same prompt and options, pass OnToken the
// same tokens, and an OnToken error ends only its own generation.
func TestStepGenerations(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []string{lmCfg, convCfg, lshLMCfg} {
		m, err := Load(tinyRun(t, cfg, nil))
		if err != nil {
			t.Fatal(err)
		}
		opts := []GenerateOptions{
			{MaxTokens: 9},
			{MaxTokens: 12, Temperature: 0.8, Seed: 3},
			{MaxTokens: 15, Temperature: 1.2, TopP: 0.9, TopK: 20, Seed: 4},
			{Temperature: 1, Seed: 5, Stop: [][]int32{{'e'}, {'a', 'b'}}},
			{MaxTokens: 7, Temperature: 1, Seed: 6},
		}
		prompts := []string{"once", "the cat sat", "a", "abracadabra", "x y"}
		boom := errors.New("boom")
		gens := make([]*Generation, len(opts))
		seen := make([][]Token, len(opts))
		for i, o := range opts {
			if i == 4 {
				o.OnToken = func(tk Token) error {
					if seen[i] = append(seen[i], tk); len(seen[i]) == 3 {
						return boom
					}
					return nil
				}
			} else {
				o.OnToken = func(tk Token) error { seen[i] = append(seen[i], tk); return nil }
			}
			if gens[i], err = m.StartGeneration(ctx, m.Encode(prompts[i]), o); err != nil {
				t.Fatal(err)
			}
		}
		for steps := 0; ; steps++ {
			done := true
			for _, g := range gens {
				done = done && g.Done()
			}
			if done {
				break
			}
			if steps > m.Config().MaxLen {
				t.Fatalf("%s: generations still running after %d steps", m.Config().Mixer, steps)
			}
			if err := m.StepGenerations(ctx, gens); err != nil {
				t.Fatal(err)
			}
		}
		for i, o := range opts {
			if i == 4 {
				if !errors.Is(gens[i].Err(), boom) || len(seen[i]) != 3 {
					t.Errorf("%s: OnToken's error: %v after %d tokens", m.Config().Mixer, gens[i].Err(), len(seen[i]))
				}
				continue
			}
			var alone []Token
			o.OnToken = func(tk Token) error { alone = append(alone, tk); return nil }
			want, err := m.Generate(ctx, m.Encode(prompts[i]), o)
			if err != nil {
				t.Fatal(err)
			}
			got := gens[i].Result()
			if gens[i].Err() != nil || !slices.Equal(got.Tokens, want.Tokens) || got.FinishReason != want.FinishReason || !slices.Equal(seen[i], alone) {
				t.Errorf("%s, generation %d: together %v (%s, %v), alone %v (%s)", m.Config().Mixer, i, got.Tokens, got.FinishReason, gens[i].Err(), want.Tokens, want.FinishReason)
			}
			if r := maxRel(got.LogProbs, want.LogProbs); r > 1e-5 {
				t.Errorf("%s, generation %d: log-probabilities differ by %.3g", m.Config().Mixer, i, r)
			}
			for _, tk := range seen[i] {
				if tk.TopLogProb < tk.LogProb {
					t.Errorf("%s, generation %d: the most probable token's log-probability %v is below the drawn one's %v", m.Config().Mixer, i, tk.TopLogProb, tk.LogProb)
				}
			}
		}
	}
}
