package aft

import (
	"fmt"

	"github.com/tokenmix/tokenmix/mixer"
)

// tests are the conformance suite's configurations of AFT kind name: both
// masking modes, with padding, T = 1, three 64-row blocks (the
// cross-block scans) and, for the windowed kinds, "distant": false.
func tests(name string) []mixer.TestCase {
	var out []mixer.TestCase
	for _, causal := range []bool{false, true} {
		var opts map[string]any
		switch name {
		case "aft_local":
			opts = map[string]any{"window": 2}
		case "aft_conv":
			opts = map[string]any{"window": 3}
			if causal {
				opts = map[string]any{"window": 2, "heads": 3}
			}
		}
		c := mixer.TestCase{Name: fmt.Sprintf("causal=%v", causal), D: 6, Heads: 2, MaxLen: 140, Causal: causal, Opts: opts, B: 2, T: 7}
		pad, one, blocks := c, c, c
		pad.Name, pad.T, pad.Pad = c.Name+"-pad", 9, true
		one.Name, one.B, one.T = c.Name+"-T1", 1, 1
		blocks.Name, blocks.T, blocks.Pad, blocks.Samples = c.Name+"-blocks", 140, true, 12
		out = append(out, c, pad, one, blocks)
		if name != "aft_simple" {
			// A strongly negative bias (the same everywhere, so the
			// output should not change): no cancellation in the window.
			neg := c
			neg.Name = c.Name + "-negbias"
			neg.Setup = func(w [][]float64, _ []float64) {
				for i := range w[8] {
					w[8][i] = -40
				}
			}
			out = append(out, neg)
		}
		if name == "aft_local" || name == "aft_conv" {
			// A sliding window: nothing beyond it (and, with padding,
			// rows whose window holds no allowed token).
			local, localPad := c, pad
			local.Name, local.Opts = c.Name+"-nodistant", map[string]any{"window": 3, "distant": false}
			localPad.Name, localPad.Opts = pad.Name+"-nodistant", local.Opts
			out = append(out, local, localPad)
		}
	}
	return out
}
