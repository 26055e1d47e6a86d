package aft

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// Kinds returns the package's registry entries: "aft_full" (w =
// pos_bias), "aft_simple" (w ≡ 0), "aft_local" (pos_bias within the
// window, 0 beyond, or −∞ with "distant": false) and "aft_conv" (a
// per-head relative kernel, rel_bias).
func Kinds() []mixer.Kind {
	return []mixer.Kind{kind("aft_full", "AFT-full"), kind("aft_simple", "AFT-simple"),
		kind("aft_local", "AFT-local"), kind("aft_conv", "AFT-conv")}
}

func kind(name, variant string) mixer.Kind {
	return mixer.Kind{
		Name:   name,
		Causal: true, Bidirectional: true, KeyPadding: true, PadInvariant: true, Decode: true,
		Paper: "Zhai et al. 2021, An Attention Free Transformer (" + variant + ")",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests: tests(name),
	}
}

// New returns the AFT layer of config c's kind (c.Opts.Kind: "aft_full",
// "aft_simple", "aft_local" or "aft_conv"). Options: "window" (aft_local,
// default 32; aft_conv, default 31, odd when bidirectional), "distant"
// (aft_local and aft_conv, default true: tokens beyond the window count
// with w = 0; false: they do not count) and "heads" (aft_conv, default
// c.Heads, must divide c.D). New returns an error naming
// the key for any unknown or invalid option, and an error for another
// kind.
func New[F kernels.Float](c mixer.Config) (*AFT[F], error) {
	for v, n := range variantNames {
		if n == c.Opts.Kind {
			return newAFT[F](variant(v), c)
		}
	}
	return nil, fmt.Errorf("mixer.kind: %q is not an AFT kind", c.Opts.Kind)
}
