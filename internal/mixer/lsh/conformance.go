package lsh

import "github.com/tokenmix/tokenmix/mixer"

// tests are the conformance suite's configurations of "lsh": causal and
// bidirectional attention, padding, several hash rounds, T not a multiple
// of 2·bucket_size, and bucket_size > T. (Finite differences need inputs
// whose hash argmax does not flip under the perturbation; these do.)
func tests() []mixer.TestCase {
	c := func(name string, causal bool, bs, nh, B, T int, pad bool) mixer.TestCase {
		return mixer.TestCase{Name: name, D: 8, Heads: 2, MaxLen: 32, Layer: 1, Causal: causal, B: B, T: T, Pad: pad,
			Opts: map[string]any{"bucket_size": bs, "n_hashes": nh}}
	}
	rope := func(c mixer.TestCase) mixer.TestCase {
		c.Opts["rope"], c.Opts["rope_base"] = true, 100
		return c
	}
	return []mixer.TestCase{
		c("causal", true, 4, 3, 2, 16, false),
		c("causal-pad", true, 4, 3, 2, 16, true),
		c("bidir", false, 4, 3, 2, 16, false),
		c("bidir-pad", false, 3, 2, 2, 13, true),
		c("causal-1round-odd", true, 2, 1, 1, 11, true),
		c("bucket>T", false, 16, 2, 2, 7, false),
		c("causal-4rounds", true, 3, 4, 1, 19, false),
		rope(c("causal-rope", true, 4, 3, 2, 16, false)),
		rope(c("bidir-pad-rope", false, 3, 2, 2, 13, true)),
	}
}
