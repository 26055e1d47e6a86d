package full

import "github.com/tokenmix/tokenmix/mixer"

// tests are the conformance suite's configurations of "full": both masking
// modes, with and without padding, ALiBi and RoPE.
func tests() []mixer.TestCase {
	alibi := map[string]any{"alibi": true}
	rope := map[string]any{"rope": true, "rope_base": 100}
	return []mixer.TestCase{
		{Name: "causal", D: 8, Heads: 2, Causal: true, B: 2, T: 9},
		{Name: "causal-pad", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Pad: true},
		{Name: "bidir", D: 8, Heads: 2, B: 2, T: 7},
		{Name: "bidir-pad", D: 8, Heads: 2, B: 2, T: 7, Pad: true},
		{Name: "causal-alibi", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Opts: alibi},
		{Name: "causal-pad-alibi", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Pad: true, Opts: alibi},
		{Name: "bidir-pad-alibi", D: 8, Heads: 2, B: 2, T: 7, Pad: true, Opts: alibi},
		{Name: "causal-rope", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Opts: rope},
		{Name: "causal-pad-rope", D: 8, Heads: 2, Causal: true, B: 2, T: 9, Pad: true, Opts: rope},
		{Name: "bidir-pad-rope", D: 8, Heads: 2, B: 2, T: 7, Pad: true, Opts: map[string]any{"rope": true}},
	}
}
