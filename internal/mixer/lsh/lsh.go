package lsh

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/attn"
	"github.com/tokenmix/tokenmix/internal/mixer/proj"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Kinds returns the package's registry entries: Reformer's LSH attention
// ("lsh").
func Kinds() []mixer.Kind {
	return []mixer.Kind{{
		Name:   "lsh",
		Causal: true, Bidirectional: true, KeyPadding: true, Decode: true,
		Paper: "Kitaev, Kaiser, Levskaya 2020, Reformer: The Efficient Transformer (LSH attention)",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return New[float32](c) },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return New[float64](c) },
		Tests: tests(),
	}}
}

// Defaults of the options.
const (
	DefaultBucketSize = 64
	DefaultNHashes    = 4
	maxNHashes        = 64
)

// LSH is Reformer's LSH self-attention with a shared query/key projection.
//
// Shapes: B batch, T time, D channels, H heads, dh = D/H head size,
// R = n_hashes rounds, NB = n_buckets.
type LSH[F kernels.Float] struct {
	d, h, dh   int
	bucketSize int
	nHashes    int
	causal     bool
	layer      int
	rope       *attn.Rope  // options rope, rope_base: rotates qk before hashing
	scale      F           // 1/√dh
	logN       []float64   // logN[k] = log k, k ≤ R
	proj       proj.Set[F] // qk, v, o
}

// The projections' indices in proj.
const (
	pqk = iota
	pv
	po
)

// New returns an LSH mixer for cfg. Options: bucket_size (int ≥ 2, default
// 64), n_hashes (int in [1,64], default 4), and rope with rope_base
// (attn.Rope: the shared qk is rotated before hashing). It returns an error if D is
// not a positive multiple of Heads, an option is invalid, or an unknown option
// is given.
func New[F kernels.Float](cfg mixer.Config) (*LSH[F], error) {
	o := cfg.Opts
	bs := o.Int("bucket_size", DefaultBucketSize)
	nh := o.Int("n_hashes", DefaultNHashes)
	if bs < 2 {
		o.Fail("bucket_size", "want an integer ≥ 2, got %d", bs)
	}
	if nh < 1 || nh > maxNHashes {
		o.Fail("n_hashes", "want an integer in [1,%d], got %d", maxNHashes, nh)
	}
	rope := attn.RopeOption(&o, cfg.D, cfg.Heads, false)
	if err := o.Err(); err != nil {
		return nil, err
	}
	if err := mixer.CheckHeads(cfg.D, cfg.Heads); err != nil {
		return nil, err
	}
	if cfg.MaxLen > math.MaxInt32 {
		return nil, fmt.Errorf("lsh: max_len %d too large", cfg.MaxLen)
	}
	m := &LSH[F]{
		d: cfg.D, h: cfg.Heads, dh: cfg.D / cfg.Heads,
		bucketSize: bs, nHashes: nh, causal: cfg.Causal, layer: cfg.Layer, rope: rope,
		proj: proj.New[F](cfg.D, kernels.PrecOf(cfg.Precision), "qk", "v", "o"),
	}
	// The shared query-key projection stays in F under bf16: the buckets
	// are chosen from it, and bf16 rounding would move tokens between them.
	m.proj.KeepFP32(pqk)
	m.scale = F(1 / math.Sqrt(float64(m.dh)))
	m.logN = make([]float64, nh+1)
	for k := 1; k <= nh; k++ {
		m.logN[k] = math.Log(float64(k))
	}
	return m, nil
}

// Params lists qk, v and o (weight [D,D], bias [D] each); o is a residual
// projection.
func (m *LSH[F]) Params() []mixer.ParamSpec { return m.proj.Params() }

// Bind sets the parameter and gradient storage. Bind panics if w or g does
// not have one slice per Params entry.
func (m *LSH[F]) Bind(w, g [][]F) {
	if len(w) != 6 || len(g) != 6 {
		panic("lsh: Bind wants 6 parameter and 6 gradient slices")
	}
	m.proj.Bind(w, g)
}

// UseBF16 implements mixer.BF16Inference: the qk, v and o projections
// multiply in bf16 from now on; hashing and attention stay in F.
func (m *LSH[F]) UseBF16(threads int) error { return m.proj.UseBF16(threads) }

// NBuckets is the number of hash buckets for sequence length t:
// t/bucket_size rounded down to an even number, at least 2.
func (m *LSH[F]) NBuckets(t int) int {
	return 2 * max(1, t/(2*m.bucketSize))
}

// ActSize is 3·B·T·D (qk, v and the attention output before o) plus B·H·T
// (the per-query log-sum-exp over all rounds).
func (m *LSH[F]) ActSize(b, t int) int { return 3*b*t*m.d + b*m.h*t }

// ScratchSize is 3·B·T·D (gradient buffers of qk, v and the attention
// output) plus one work slot per thread of the budget (at most B·H), each
// O(T·(dh + R) + bucket_size²).
func (m *LSH[F]) ScratchSize(b, t, threads int) int {
	return 3*b*t*m.d + min(mixer.Budget(threads), b*m.h)*m.slotSize(t)
}

// acts splits act into qk, v, att [B,T,D] and lse [B,H,T].
func (m *LSH[F]) acts(act []F, b, t int) (qk, v, att, lse []F) {
	n := b * t * m.d
	_ = act[:m.ActSize(b, t)]
	return act[:n], act[n : 2*n], act[2*n : 3*n], act[3*n : 3*n+b*m.h*t]
}

// Forward computes out = Attn(x) following the package doc. Forward panics if
// a buffer is shorter than its declared size.
func (m *LSH[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	n, th := p.B*p.T, mixer.Budget(p.Threads)
	qk, v, att, lse := m.acts(act, p.B, p.T)
	m.proj.Forward(th, pqk, qk, x, n)
	attn.RopeApply(m.rope, th, qk, p.B, p.T, false) // before hashing; act keeps qk rotated
	m.proj.Forward(th, pv, v, x, n)
	m.each(scratch[3*n*m.d:], p, func(w *work[F], b, h int) {
		w.forward(att, lse, qk, v, b, h, p)
	})
	m.proj.Forward(th, po, out, att, n)
}

// Backward accumulates into dx and the parameter gradients. It recomputes the
// hash buckets from qk and p.Seed exactly as Forward drew them. Backward
// panics if a buffer is shorter than its declared size.
func (m *LSH[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	n, th := p.B*p.T, mixer.Budget(p.Threads)
	D := m.d
	qk, v, att, lse := m.acts(act, p.B, p.T)
	dqk, dv, datt := scratch[:n*D], scratch[n*D:2*n*D], scratch[2*n*D:3*n*D]
	m.proj.Backward(th, po, datt, dout, att, n, true)
	m.each(scratch[3*n*D:], p, func(w *work[F], b, h int) {
		w.backward(dqk, dv, datt, att, lse, qk, v, b, h, p)
	})
	attn.RopeApply(m.rope, th, dqk, p.B, p.T, true) // the rotation's transpose
	m.proj.Backward(th, pqk, dx, dqk, x, n, false)
	m.proj.Backward(th, pv, dx, dv, x, n, false)
}

// each runs fn for every (batch, head) item, spreading the items over the
// work slots that fit in scratch, on at most p.Threads threads; one slot
// serves one item at a time.
func (m *LSH[F]) each(scratch []F, p mixer.Pass, fn func(w *work[F], b, h int)) {
	items := p.B * m.h
	size := m.slotSize(p.T)
	slots := min(items, len(scratch)/size)
	if slots < 1 {
		panic("lsh: scratch smaller than ScratchSize")
	}
	parallel.For(mixer.Budget(p.Threads), slots, 1, func(_, lo, hi int) {
		for s := lo; s < hi; s++ {
			w := m.carve(scratch[s*size:(s+1)*size], p.T)
			for it := s; it < items; it += slots {
				fn(&w, it/m.h, it%m.h)
			}
		}
	})
}

// int32s views the first n elements' worth of s as int32s. Scratch is one
// float slab (the memory plan), so integer tables live in it reinterpreted;
// it holds no pointers, so this is safe for the garbage collector.
func int32s[F kernels.Float](s []F, n int) []int32 {
	if n == 0 {
		return nil
	}
	_ = s[:n] // n elements hold at least n int32s (sizeof F ≥ 4)
	return unsafe.Slice((*int32)(unsafe.Pointer(&s[0])), n)
}
