package full

import "github.com/tokenmix/tokenmix/mixer"

// tests are the conformance suite's configurations of "full": both masking
// modes, with and without padding and ALiBi.
func tests() []mixer.TestCase {
	alibi := map[string]any{"alibi": true}
	return []mixer.TestCase{
		{Name: "causal", D: 8, Heads: 2, Causal: true, B: 2, T: 9},
		{Name: "causal-pad", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Pad: true},
		{Name: "bidir", D: 8, Heads: 2, B: 2, T: 7},
		{Name: "bidir-pad", D: 8, Heads: 2, B: 2, T: 7, Pad: true},
		{Name: "causal-alibi", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Opts: alibi},
		{Name: "causal-pad-alibi", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Pad: true, Opts: alibi},
		{Name: "bidir-pad-alibi", D: 8, Heads: 2, B: 2, T: 7, Pad: true, Opts: alibi},
	}
}
