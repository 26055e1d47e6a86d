package entmax

import (
	"fmt"

	"github.com/tokenmix/tokenmix/mixer"
)

// tests are the conformance suite's configurations of "entmax": α = 1
// (softmax), 1.3, 1.5 and a learned α, both masking modes, with padding.
// (α = 2, sparsemax, needs inputs away from its kinks; the package's own
// tests run it.)
func tests() []mixer.TestCase {
	var out []mixer.TestCase
	for _, causal := range []bool{true, false} {
		for _, o := range []map[string]any{{"alpha": 1.0}, {"alpha": 1.3}, {"alpha": 1.5}, {"alpha": 1.5, "learn_alpha": true}} {
			name := fmt.Sprintf("alpha=%v/learn=%v/causal=%v", o["alpha"], o["learn_alpha"] != nil, causal)
			out = append(out, mixer.TestCase{Name: name, D: 12, Heads: 3, MaxLen: 64, Causal: causal, Opts: o, B: 2, T: 37, Pad: true})
		}
	}
	// Without padding, so the suite also checks decoding.
	for _, o := range []map[string]any{{"alpha": 1.5}, {"alpha": 1.3, "learn_alpha": true}} {
		out = append(out, mixer.TestCase{Name: fmt.Sprintf("alpha=%v/causal/nopad", o["alpha"]), D: 12, Heads: 3, MaxLen: 64, Causal: true, Opts: o, B: 2, T: 37})
	}
	// RoPE: decoding (causal, no padding) and padding (bidirectional).
	for _, causal := range []bool{true, false} {
		o := map[string]any{"alpha": 1.5, "learn_alpha": true, "rope": true, "rope_base": 100}
		out = append(out, mixer.TestCase{Name: fmt.Sprintf("alpha=1.5/learn/rope/causal=%v", causal), D: 12, Heads: 3, MaxLen: 64,
			Causal: causal, Opts: o, B: 2, T: 37, Pad: !causal})
	}
	return out
}
