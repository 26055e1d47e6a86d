package sparse

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

const paper = "Child, Gray, Radford & Sutskever 2019, Generating Long Sequences with Sparse Transformers"

// Kinds returns the registry entries of the package: the strided pattern
// ("strided") and the fixed one ("fixed").
func Kinds() []mixer.Kind { return []mixer.Kind{kind("strided"), kind("fixed")} }

func kind(name string) mixer.Kind {
	return mixer.Kind{
		Name:   name,
		Causal: true, Bidirectional: true, KeyPadding: true, PadInvariant: true, Decode: true,
		Paper: paper,
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests: tests(name == "fixed"),
	}
}

// Combine modes.
const (
	Heads      = "heads"      // heads 0…H/2−1 use A1, the others A2
	Merge      = "merge"      // every head uses A1 ∪ A2
	Interleave = "interleave" // even layers use A1, odd layers A2
)

// Options reads and validates the options of c's kind (c.Opts.Kind,
// "strided" or "fixed"): block (l ≥ 1, required), summary (c, 1 ≤ c ≤ l,
// required for fixed, an error for strided) and combine (default "merge").
// It returns an error naming the key.
func Options(c mixer.Config) (*Pattern, error) {
	o := c.Opts
	if o.Kind != "strided" && o.Kind != "fixed" {
		return nil, fmt.Errorf("mixer.kind: %q is not a sparse kind (strided, fixed)", o.Kind)
	}
	fixed := o.Kind == "fixed"
	p := &Pattern{Fixed: fixed, Causal: c.Causal, Heads: c.Heads}
	if !o.Has("block") {
		o.Fail("block", "required: the stride l (about √max_len, e.g. 32 for max_len 1024)")
	}
	p.L = o.Int("block", 0)
	if o.Has("block") && p.L < 1 {
		o.Fail("block", "must be ≥ 1, got %d", p.L)
	}
	if fixed {
		if !o.Has("summary") {
			o.Fail("summary", "required for kind fixed: the number c of summary positions per block (1 ≤ c ≤ block)")
		}
		p.C = o.Int("summary", 0)
		if o.Has("summary") && (p.C < 1 || p.L >= 1 && p.C > p.L) {
			o.Fail("summary", "must satisfy 1 ≤ summary ≤ block (%d), got %d", p.L, p.C)
		}
	} else if o.Has("summary") {
		o.Fail("summary", "only kind \"fixed\" has summary positions")
	}
	comb := o.String("combine", Merge)
	switch comb {
	case Heads:
		if c.Heads%2 != 0 {
			o.Fail("combine", "\"heads\" needs an even n_heads, got %d", c.Heads)
		}
	case Merge, Interleave:
	default:
		o.Fail("combine", "want \"heads\", \"merge\" or \"interleave\", got %q", comb)
	}
	p.Combine = comb
	p.Layer = c.Layer
	p.Slopes = attn.ALiBiOption(&o, c.Heads)
	p.Rope = attn.RopeOption(&o, c.D, c.Heads, p.Slopes != nil)
	if err := o.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

// New returns sparse attention for config c, with the strided or fixed
// pattern as c.Opts.Kind says. It returns an error naming the key for any
// invalid option.
func New[F kernels.Float](c mixer.Config) (*attn.Attention[F], error) {
	p, err := Options(c)
	if err != nil {
		return nil, err
	}
	a, err := attn.New[F](c, p)
	if err == nil {
		a.Tiles, a.Slopes, a.Rope, a.Causal = Tiles, p.Slopes, p.Rope, c.Causal
		if !p.Fixed {
			a.Stride = p.L // strided keys i, i−l, …: residue-class copies
		}
	}
	return a, err
}

// Tiles bound the sparse kinds' blocks: 128 queries by 64 keys. Bands and
// residue classes use 64×64 tiles; fixed's summary keys use the taller ones.
var Tiles = attn.Tiles{Q: 128, K: 64}

// NewNaive returns the masked-dense twin of New (the test oracle).
func NewNaive[F kernels.Float](c mixer.Config) (*attn.Naive[F], error) {
	p, err := Options(c)
	if err != nil {
		return nil, err
	}
	n, err := attn.NewNaive[F](c, p)
	if err == nil {
		n.Slopes, n.Rope = p.Slopes, p.Rope
	}
	return n, err
}

func (p *Pattern) String() string {
	name := "strided"
	if p.Fixed {
		name = fmt.Sprintf("fixed c=%d", p.C)
	}
	return fmt.Sprintf("%s l=%d combine=%s causal=%v", name, p.L, p.Combine, p.Causal)
}
