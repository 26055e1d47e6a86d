package aft

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// FullKind returns the registry entry of "aft_full" (w = pos_bias).
func FullKind() mixer.Kind { return kind("aft_full", "AFT-full") }

// LocalKind returns the registry entry of "aft_local" (pos_bias within the
// window, 0 beyond).
func LocalKind() mixer.Kind { return kind("aft_local", "AFT-local") }

// ConvKind returns the registry entry of "aft_conv" (per-head relative
// kernel rel_bias).
func ConvKind() mixer.Kind { return kind("aft_conv", "AFT-conv") }

func kind(name, variant string) mixer.Kind {
	return mixer.Kind{
		Name:   name,
		Causal: true, Bidirectional: true, KeyPadding: true, PadInvariant: true, Decode: true,
		Paper: "Zhai et al. 2021, An Attention Free Transformer (" + variant + ")",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](name, c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](name, c) },
		Tests: tests(name),
	}
}

// New returns the AFT layer of kind name ("aft_full", "aft_simple",
// "aft_local" or "aft_conv") for config c. Options: "window" (aft_local,
// default 32; aft_conv, default 31, odd when bidirectional) and "heads"
// (aft_conv, default c.Heads, must divide c.D). New returns an error naming
// the key for any unknown or invalid option, and an error for an unknown
// name.
func New[F kernels.Float](name string, c mixer.Config) (*AFT[F], error) {
	for v, n := range variantNames {
		if n == name {
			return newAFT[F](variant(v), c)
		}
	}
	return nil, fmt.Errorf("mixer.kind: %q is not an AFT kind", name)
}
