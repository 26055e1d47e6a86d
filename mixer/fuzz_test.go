package mixer_test

import (
	"testing"

	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// FuzzOptions checks that ParseOptions never panics and that every
// registered kind's constructors, given the options it accepts, return a
// mixer or an error, never a panic.
//
//	go test -run '^$' -fuzz '^FuzzOptions$' -fuzztime 45s ./mixer
func FuzzOptions(f *testing.F) {
	for _, s := range []string{
		`{"kind": "full"}`,
		`{"kind": "full", "alibi": true}`,
		`{"kind": "lsh", "bucket_size": 4, "n_hashes": 2}`,
		`{"kind": "lsh", "n_hashes": 65}`,
		`{"kind": "strided", "block": 4}`,
		`{"kind": "fixed", "block": 4, "summary": 2, "combine": "heads"}`,
		`{"kind": "fixed", "block": 4, "summary": 5}`,
		`{"kind": "strided", "block": 3, "combine": "interleave", "alibi": true}`,
		`{"kind": "entmax", "alpha": 1.5, "learn_alpha": true}`,
		`{"kind": "entmax", "alpha": 0.5}`,
		`{"kind": "topk", "k": 4}`,
		`{"kind": "topk", "k": 9223372036854775807}`,
		`{"kind": "aft_local", "window": 3}`,
		`{"kind": "aft_conv", "window": 4, "heads": 2}`,
		`{"kind": "aft_conv", "window": 9223372036854775807, "heads": 1}`,
		`{"kind": "fnet", "method": "gemm"}`,
		`{"kind": "fnet", "method": "dct"}`,
		`{"kind": "full", "alibi": null}`,
		`{"kind": 3}`,
		`{"window": 3}`,
		`{}`,
		`{"kind": "full"} {}`,
		`null`,
		``,
	} {
		f.Add([]byte(s))
	}
	kinds := registry.All()
	f.Fuzz(func(t *testing.T, b []byte) {
		opts, err := mixer.ParseOptions(b)
		if err != nil {
			return
		}
		raw := opts.Raw()
		delete(raw, "kind")
		for _, k := range kinds {
			for _, causal := range []bool{false, true} {
				// Fresh options per constructor: Options record the keys
				// read.
				c := mixer.Config{D: 16, Heads: 2, MaxLen: 32, Causal: causal, NLayers: 1,
					Opts: mixer.NewOptions(k.Name, raw)}
				if m, err := k.New32(c); err == nil {
					run(t, m, k)
				}
				c.Opts = mixer.NewOptions(k.Name, raw)
				k.New64(c)
			}
		}
	})
}

// run binds m to small parameters and runs a forward and backward of a
// batch of 2 sequences of 8 positions (half of the second one padding, for
// kinds with KeyPadding), when the parameters and buffers are small.
func run(t *testing.T, m mixer.Mixer[float32], k mixer.Kind) {
	const B, T, D, limit = 2, 8, 16, 1 << 20
	total := 0
	var w, g [][]float32
	for _, s := range m.Params() {
		n := 1
		for _, d := range s.Shape {
			if d < 0 || d > 0 && n > limit/d {
				return
			}
			n *= d
		}
		if total += n; total > limit {
			return
		}
		w = append(w, make([]float32, n))
		g = append(g, make([]float32, n))
	}
	act, scratch := m.ActSize(B, T), m.ScratchSize(B, T, 0)
	if act < 0 || scratch < 0 {
		t.Fatalf("%s: ActSize %d, ScratchSize %d", k.Name, act, scratch)
	}
	if act > limit || scratch > limit {
		return
	}
	for i, p := range w {
		for j := range p {
			p[j] = float32((i+j)%7-3) / 16
		}
	}
	m.Bind(w, g)
	x := make([]float32, B*T*D)
	for i := range x {
		x[i] = float32(i%11-5) / 8
	}
	p := mixer.Pass{B: B, T: T, Seed: 1}
	if k.KeyPadding {
		p.Pad = make([]bool, B*T)
		for j := T / 2; j < T; j++ {
			p.Pad[T+j] = true
		}
	}
	out, a, sc, dx := make([]float32, B*T*D), make([]float32, act), make([]float32, scratch), make([]float32, B*T*D)
	m.Forward(out, a, sc, x, p)
	m.Backward(dx, sc, out, a, x, p)
}
