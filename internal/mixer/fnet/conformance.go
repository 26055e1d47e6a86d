package fnet

import "github.com/tokenmix/tokenmix/mixer"

// tests are the conformance suite's configurations of "fnet": each method,
// at even, odd and prime sizes of both axes.
func tests() []mixer.TestCase {
	var out []mixer.TestCase
	for _, m := range []string{"fft", "gemm", ""} {
		opts := map[string]any{}
		if m != "" {
			opts["method"] = m
		}
		out = append(out,
			mixer.TestCase{Name: "bidir-" + m, D: 8, Heads: 1, MaxLen: 64, Opts: opts, B: 2, T: 6},
			mixer.TestCase{Name: "odd-" + m, D: 7, Heads: 1, MaxLen: 64, Opts: opts, B: 1, T: 5},
			mixer.TestCase{Name: "prime-" + m, D: 17, Heads: 1, MaxLen: 64, Opts: opts, B: 2, T: 19},
		)
	}
	return out
}
