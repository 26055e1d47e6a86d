package sparse

import (
	"fmt"

	"github.com/tokenmix/tokenmix/mixer"
)

// tests are the conformance suite's configurations of strided (fixed =
// false) or fixed: both masking modes, every combine mode (interleave on
// both layer parities), with and without padding, block 3 at T = 11.
func tests(fixed bool) []mixer.TestCase {
	var out []mixer.TestCase
	for _, causal := range []bool{true, false} {
		for _, comb := range []string{Heads, Merge, Interleave} {
			opts := map[string]any{"block": 3, "combine": comb}
			if fixed {
				opts["summary"] = 1
			}
			layers := []int{0}
			if comb == Interleave {
				layers = []int{0, 1}
			}
			for _, layer := range layers {
				name := fmt.Sprintf("%s/causal=%v/layer%d", comb, causal, layer)
				c := mixer.TestCase{Name: name, D: 8, Heads: 2, Causal: causal, Layer: layer, Opts: opts, B: 2, T: 11}
				out = append(out, c)
				c.Name, c.Pad = name+"/pad", true
				out = append(out, c)
			}
		}
	}
	// RoPE (rope_base small enough that every pair turns at these lengths).
	for _, causal := range []bool{true, false} {
		opts := map[string]any{"block": 3, "combine": Merge, "rope": true, "rope_base": 100}
		if fixed {
			opts["summary"] = 1
		}
		c := mixer.TestCase{Name: fmt.Sprintf("merge/causal=%v/rope", causal), D: 8, Heads: 2, Causal: causal, Opts: opts, B: 2, T: 11}
		out = append(out, c)
		c.Name, c.Pad = c.Name+"/pad", true
		out = append(out, c)
	}
	return out
}
