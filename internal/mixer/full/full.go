package full

import (
	"sync"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/mixer"
)

// Kinds returns the package's registry entries: full attention ("full").
func Kinds() []mixer.Kind {
	return []mixer.Kind{{
		Name:   "full",
		Causal: true, Bidirectional: true, KeyPadding: true, PadInvariant: true, Decode: true,
		Paper: "Vaswani et al. 2017, Attention Is All You Need (memory-efficient exact kernel: Rabe & Staats 2021; Dao 2023)",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests: tests(),
	}}
}

// New returns full attention for config c. Its options are the position
// schemes "alibi" (default false), the ALiBi bias (attn.ALiBiSlopes), and
// "rope" with "rope_base", rotary embeddings (attn.Rope), one or the
// other; New returns an error naming the key for any other option, or if
// c.Heads does not divide c.D.
func New[F kernels.Float](c mixer.Config) (*attn.Attention[F], error) {
	slopes := attn.ALiBiOption(&c.Opts, c.Heads)
	rope := attn.RopeOption(&c.Opts, c.D, c.Heads, slopes != nil)
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	a, err := attn.New[F](c, &Pattern{Causal: c.Causal})
	if err == nil {
		a.Tiles, a.TilesBF16, a.Slopes, a.Rope, a.Causal = Tiles, TilesBF16, slopes, rope, c.Causal
	}
	return a, err
}

// Tiles are full attention's block sizes: 128 queries by 64 keys. Taller
// query tiles than the sparse kinds' 64 amortise the packing of each key
// tile over more rows; dense rows waste nothing on it.
var Tiles = attn.Tiles{Q: 128, K: 64}

// TilesBF16 are its block sizes where the score and value products run in
// bf16 (precision bf16, and bf16 inference on AMX or AVX512-BF16): 128
// queries by 128 keys. The bf16 products run several times faster than the
// float32 ones, so the work per tile that does not shrink with them (the
// calls, packing P and dS, the accumulation into the outputs) counts for
// more; wider key tiles halve the tiles and double the K of the products
// with P and dS.
var TilesBF16 = attn.Tiles{Q: 128, K: 128}

// NewNaive returns the materialised-T×T twin of New (the test oracle).
func NewNaive[F kernels.Float](c mixer.Config) (*attn.Naive[F], error) {
	slopes := attn.ALiBiOption(&c.Opts, c.Heads)
	rope := attn.RopeOption(&c.Opts, c.D, c.Heads, slopes != nil)
	if err := c.Opts.Err(); err != nil {
		return nil, err
	}
	n, err := attn.NewNaive[F](c, &Pattern{Causal: c.Causal})
	if err == nil {
		n.Slopes, n.Rope = slopes, rope
	}
	return n, err
}

// Pattern is full attention's pattern: every key, or every key j ≤ i when
// Causal. Its layouts are cached per (T, tiles).
type Pattern struct {
	Causal bool
	mu     sync.Mutex
	cache  map[[3]int]*attn.Layout
}

// Allow reports whether query i may attend to key j.
func (p *Pattern) Allow(h, T, i, j int) bool { return !p.Causal || j <= i }

// Dense reports that every query may see every earlier key (attn.Denser).
func (p *Pattern) Dense() bool { return true }

// CausalKeys appends 0…i (attn.KeyLister).
func (p *Pattern) CausalKeys(h, i int, dst []int) []int {
	for j := 0; j <= i; j++ {
		dst = append(dst, j)
	}
	return dst
}

// Layout returns the dense tiled layout (the same for every head).
func (p *Pattern) Layout(h, T int, t attn.Tiles) *attn.Layout {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := [3]int{T, t.Q, t.K}
	if l, ok := p.cache[key]; ok {
		return l
	}
	if p.cache == nil {
		p.cache = map[[3]int]*attn.Layout{}
	}
	l := attn.Dense(T, t, p.Causal)
	p.cache[key] = l
	return l
}
