package tokenmix

import (
	"context"
	"sync"
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// prevMixer is a causal kind without a decoding state (out_t = x_{t−1}),
// registered to test the streams that run their prefix again.
type prevMixer[F float32 | float64] struct{ d int }

func (p prevMixer[F]) Params() []mixer.ParamSpec   { return nil }
func (p prevMixer[F]) Bind(w, g [][]F)             {}
func (p prevMixer[F]) ActSize(b, t int) int        { return 0 }
func (p prevMixer[F]) ScratchSize(b, t, _ int) int { return 0 }
func (p prevMixer[F]) Forward(out, act, scratch, x []F, pa mixer.Pass) {
	D := p.d
	for b := range pa.B {
		clear(out[b*pa.T*D : (b*pa.T+1)*D])
		copy(out[(b*pa.T+1)*D:(b+1)*pa.T*D], x[b*pa.T*D:((b+1)*pa.T-1)*D])
	}
}
func (p prevMixer[F]) Backward(dx, scratch, dout, act, x []F, pa mixer.Pass) {}

var addPrev sync.Once

func TestStreamWithoutState(t *testing.T) {
	addPrev.Do(func() {
		err := registry.Add(mixer.Kind{Name: "test_prev", Causal: true, Paper: "a test kind",
			New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return prevMixer[float32]{c.D}, c.Opts.Err() },
			New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return prevMixer[float64]{c.D}, c.Opts.Err() },
			Tests: []mixer.TestCase{{Name: "causal", D: 4, Heads: 1, Causal: true, B: 1, T: 3}}})
		if err != nil {
			t.Fatal(err)
		}
	})
	cfg := `{"vocab_size": 256, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 40,
	 "causal": true, "task": "lm", "mixer": {"kind": "test_prev"}, "train": {}}`
	m, err := Load(tinyRun(t, cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := m.Encode("prefix again")
	all, _ := m.Logits(ctx, [][]int32{text})
	s, err := m.NewStream(StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.dec != nil {
		t.Fatal("a kind without Decode got a decoding state")
	}
	for pos := range text {
		got, err := s.Append(ctx, text[pos])
		if err != nil {
			t.Fatal(err)
		}
		if r := maxRel(got, all.Data[pos*256:(pos+1)*256]); r > 1e-6 {
			t.Fatalf("after %d tokens the stream differs by %.3g", pos+1, r)
		}
	}
	res, err := m.Generate(ctx, text[:3], GenerateOptions{MaxTokens: 4})
	if err != nil || len(res.Tokens) != 4 {
		t.Errorf("generate without a state: %v, %v", res, err)
	}
}
