package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// TestDecodeEqualsForward: feeding a sequence position by position, and in
// uneven chunks, gives at every position the logits of a full forward pass:
// within 1e-12 in float64 and 1e-5 in float32, per tensor max|a−b|/max|b|,
// for plain, reversible, checkpointed and chunked-feed-forward models.
func TestDecodeEqualsForward(t *testing.T) {
	for _, mix := range []string{`{"kind": "full"}`, `{"kind": "full", "alibi": true}`, `{"kind": "aft_simple"}`,
		`{"kind": "aft_conv", "window": 4}`, `{"kind": "strided", "block": 3}`, `{"kind": "topk", "k": 4}`, `{"kind": "entmax", "alpha": 1.5}`, `{"kind": "entmax", "alpha": 1.3, "learn_alpha": true}`,
		`{"kind": "lsh", "bucket_size": 2, "n_hashes": 3}`} {
		for _, extra := range []string{"", `, "reversible": true`, `, "checkpoint": true`, `, "ff_chunks": 3`} {
			js := fmt.Sprintf(`{"vocab_size": 17, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 24,
				"causal": true, "task": "lm", "mixer": %s%s}`, mix, extra)
			c, err := ParseConfig([]byte(js))
			if err != nil {
				t.Fatal(err)
			}
			name := mix + extra
			t.Run(name+"/float64", func(t *testing.T) { checkDecode[float64](t, c, 1e-12) })
			t.Run(name+"/float32", func(t *testing.T) { checkDecode[float32](t, c, 1e-5) })
		}
	}
}

func checkDecode[F kernels.Float](t *testing.T, c *Config, tol float64) {
	m, err := New[F](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(3)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range m.Params { // larger than the initialisation, so every part matters
		m.Params[i] += F(rng.NormFloat64() * 0.05)
	}
	const T = 21
	tokens := make([]int32, T)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(c.VocabSize))
	}
	V := c.VocabSize
	var want []F // decoding runs first once: it must not depend on an earlier Forward (entmax's learned α)
	for _, chunked := range []bool{false, true} {
		d, err := m.NewDecoding(T)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]F, T*V)
		for pos, n := 0, 1; pos < T; pos += n {
			n = 1
			if chunked {
				n = min(pos%4+1, T-pos)
			}
			if err := m.Decode(d, tokens[pos:pos+n], got[pos*V:]); err != nil {
				t.Fatal(err)
			}
		}
		if want == nil {
			if _, err := m.Forward(tokens, nil, 1, T); err != nil {
				t.Fatal(err)
			}
			want = append([]F(nil), m.Logits()...)
		}
		var diff, mx float64
		for i := range want {
			diff = math.Max(diff, math.Abs(float64(got[i]-want[i])))
			mx = math.Max(mx, math.Abs(float64(want[i])))
		}
		if diff > tol*mx {
			t.Errorf("chunked %v: decoded logits differ by %.3g (relative %.3g > %g)", chunked, diff, diff/mx, tol)
		}
		if err := m.Decode(d, tokens[:1], got); err == nil {
			t.Error("decoding past the length: no error")
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`"causal": false, "task": "lm", "mixer": {"kind": "full"}`, "needs a causal lm"},
		{`"causal": true, "task": "classify", "n_classes": 2, "mixer": {"kind": "full"}`, "needs a causal lm"},
		{`"causal": true, "task": "lm", "mixer": {"kind": "cummean"}`, `"cummean" does not decode`},
	} {
		cfg, err := ParseConfigWith([]byte(`{"vocab_size": 17, "d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_len": 24, `+c.js+`}`), testLookup)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := New[float32](cfg)
		if _, err := m.NewDecoding(8); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.js, err)
		}
	}
}

// TestDecodeBatch: stepping several sequences at once (after prompts of
// different lengths) equals stepping each alone, for every kind that
// decodes (lsh steps its sequences one by one).
func TestDecodeBatch(t *testing.T) {
	for _, mix := range []string{`{"kind": "full"}`, `{"kind": "strided", "block": 3}`, `{"kind": "fixed", "block": 4, "summary": 1}`,
		`{"kind": "aft_simple"}`, `{"kind": "aft_local", "window": 4}`, `{"kind": "aft_conv", "window": 4}`, `{"kind": "aft_full"}`,
		`{"kind": "entmax"}`, `{"kind": "topk", "k": 3}`, `{"kind": "lsh", "bucket_size": 4}`} {
		for _, extra := range []string{"", `, "reversible": true`} {
			c, err := ParseConfig([]byte(fmt.Sprintf(`{"vocab_size": 17, "d_model": 8, "n_heads": 2, "n_layers": 2, "d_ff": 16, "max_len": 24,
				"causal": true, "task": "lm", "mixer": %s%s}`, mix, extra)))
			if err != nil {
				t.Fatal(err)
			}
			t.Run(mix+extra, func(t *testing.T) { checkDecodeBatch[float64](t, c, 1e-12) })
		}
	}
}

func checkDecodeBatch[F kernels.Float](t *testing.T, c *Config, tol float64) {
	m, err := New[F](c)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(5)
	rng := rand.New(rand.NewPCG(6, 6))
	const n = 5
	V := c.VocabSize
	var single, batch []*Decoding[F]
	for i := range n {
		prompt := make([]int32, 1+i*3)
		for j := range prompt {
			prompt[j] = int32(rng.IntN(V))
		}
		for _, list := range []*[]*Decoding[F]{&single, &batch} {
			d, err := m.NewDecoding(24)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Decode(d, prompt, make([]F, len(prompt)*V)); err != nil {
				t.Fatal(err)
			}
			*list = append(*list, d)
		}
	}
	for step := range 4 {
		next := make([]int32, n)
		for i := range next {
			next[i] = int32(rng.IntN(V))
		}
		got := make([]F, n*V)
		if err := m.DecodeBatch(batch, next, got); err != nil {
			t.Fatal(err)
		}
		for i, d := range single {
			want := make([]F, V)
			if err := m.Decode(d, next[i:i+1], want); err != nil {
				t.Fatal(err)
			}
			for j := range want {
				if math.Abs(float64(got[i*V+j]-want[j])) > tol*(1+math.Abs(float64(want[j]))) {
					t.Fatalf("step %d sequence %d: batched logit %d is %v, alone %v", step, i, j, got[i*V+j], want[j])
				}
			}
		}
	}
	if err := m.DecodeBatch([]*Decoding[F]{batch[0], batch[0]}, []int32{1, 2}, make([]F, 2*V)); err == nil {
		t.Error("DecodeBatch with one sequence twice: no error")
	}
}
