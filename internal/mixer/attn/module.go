package attn

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/proj"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Tiles are the largest block sizes a layout may use: Q query rows by K
// keys. Each worker holds two Q×K score tiles.
type Tiles struct{ Q, K int }

// DefaultTiles are 64×64 float32 score tiles: two per worker stay in L2
// with Dh = 64 rows of q and k. Full attention uses taller query tiles (see
// mixer/full), which amortise the packing of each key tile over more rows.
var DefaultTiles = Tiles{Q: 64, K: 64}

// Pattern says which keys each query may attend to, per head. Padding is not
// part of it: keys marked in Pass.Pad are always excluded on top.
type Pattern interface {
	// Allow reports whether query i may attend to key j in head h at length
	// T. It is the naive definition, used by the masked-dense twin and the
	// tests; the kernels use Layout.
	Allow(h, T, i, j int) bool
	// Layout returns head h's block layout at length T, with blocks of at
	// most t.Q queries by t.K keys. Implementations cache it: Forward calls
	// it on every pass.
	Layout(h, T int, t Tiles) *Layout
}

// Attention is multi-head softmax attention over a Pattern with q, k, v, o
// projections d→d: out = o(concat_h softmax(q_h·k_hᵀ/√Dh over allowed)·v_h).
// It implements mixer.Mixer with the memory-efficient kernels of this
// package: activations are O(T·D) per layer, never T×T.
type Attention[F kernels.Float] struct {
	D, H, Dh int
	Pat      Pattern
	// Tiles bounds the block sizes (DefaultTiles unless the mixer or a
	// test changes it before the first Forward).
	Tiles Tiles
	// TilesBF16, when set, replaces Tiles where the score and value
	// products run in bf16 (see bf16).
	TilesBF16 Tiles
	// Stride, when > 1, is the key stride of the pattern's strided blocks:
	// the kernels then keep k and v transposed in residue-class order too
	// (see transpose.go). Set it before ScratchSize.
	Stride int
	// Slopes, when set (one per head), add the ALiBi position bias
	// −Slopes[h]·|i−j| to the scaled scores of head h (see ALiBiSlopes).
	Slopes []float64
	// Rope, when set, rotates q and k by their positions (see Rope).
	Rope *Rope
	// Causal says the pattern never lets a query see a later key; Decode
	// needs it.
	Causal bool
	proj   proj.Set[F] // q, k, v, o
	btab   []F         // biasTable's cache, for lengths up to bT
	bT     int
	// Kept between passes (a mixer belongs to one layer, whose passes do
	// not overlap), so that a pass does not allocate them.
	lays  []*Layout
	units []unit
	// unpacked (tests) makes bf16 pack every tile product's operands
	// itself (kernels.Gemm on one thread), as for blocks the packs do not cover.
	unpacked bool
	// plain (tests) makes the float32 and float64 passes read the tile
	// products' operands from [B,T,D] and from row-major transposed
	// copies, packing them for every tile, as without the head-major and
	// panel copies (heads.go, transpose.go).
	plain bool
	// store16: a float32 mixer in precision bf16 or fp16 keeps q, k, v
	// and o in act as 16-bit values of format f16 (see Forward).
	store16 bool
	f16     kernels.Format16
	// infer16: UseBF16 was called (bf16 inference of a float32 mixer).
	infer16 bool
}

// The projections' indices in proj: the attention kinds' q, k, v, o.
const (
	pq = iota
	pk
	pv
	po
)

// biasTable returns the ALiBi bias by offset for lengths up to n =
// a.bT ≥ T, [H, 2n−1] with row h, element u = −Slopes[h]·|u − (n−1)|, so
// that query i and key j read element j − i + n − 1. It is built for the
// longest T seen and kept (a mixer belongs to one layer, whose passes do
// not overlap), so batches of varying length reuse it.
func (a *Attention[F]) biasTable(T int) []F {
	if a.btab != nil && a.bT >= T {
		return a.btab
	}
	n := 2*T - 1
	a.btab = make([]F, a.H*n)
	for h, m := range a.Slopes {
		for u := 0; u < n; u++ {
			a.btab[h*n+u] = F(-m * math.Abs(float64(u-(T-1))))
		}
	}
	a.bT = T
	return a.btab
}

// ALiBiSlopes returns the per-head slopes of ALiBi (Press et al. 2022,
// "Train Short, Test Long"): the geometric sequence 2^(−8(h+1)/H) for
// heads h = 0…H−1, so with 8 heads 1/2, 1/4, …, 1/256.
func ALiBiSlopes(H int) []float64 {
	s := make([]float64, H)
	for h := range s {
		s[h] = math.Exp2(-8 * float64(h+1) / float64(H))
	}
	return s
}

// ALiBiOption reads the boolean option "alibi" of the attention kinds
// built on this package and returns ALiBiSlopes(heads) when it is true,
// else nil.
func ALiBiOption(o *mixer.Options, heads int) []float64 {
	if o.Bool("alibi", false) {
		return ALiBiSlopes(heads)
	}
	return nil
}

// New returns attention over pat with c.D channels and c.Heads heads, with
// its products (projections, scores and values) in c.Precision. New returns
// an error if D or the heads are not positive or the heads do not divide D.
func New[F kernels.Float](c mixer.Config, pat Pattern) (*Attention[F], error) {
	d, h := c.D, c.Heads
	if err := mixer.CheckHeads(d, h); err != nil {
		return nil, err
	}
	a := &Attention[F]{D: d, H: h, Dh: d / h, Pat: pat, Tiles: DefaultTiles, proj: proj.New[F](d, kernels.PrecOf(c.Precision), "q", "k", "v", "o")}
	var z F
	if _, ok := any(z).(float32); ok {
		a.f16, a.store16 = kernels.Format16Of(c.Precision)
	}
	return a, nil
}

// Params returns q, k, v, o linears d→d; o projects into the residual stream.
func (a *Attention[F]) Params() []mixer.ParamSpec { return a.proj.Params() }

// Bind stores the parameter and gradient slices (in Params order).
func (a *Attention[F]) Bind(w, g [][]F) { a.proj.Bind(w, g) }

// UseBF16 implements mixer.BF16Inference: the q, k, v and o projections
// multiply in bf16 from now on. With a dense pattern (full attention), on
// a bf16 path that packs its operands, so do the score and value products,
// on q, k and v packed once per pass and on TilesBF16 where set, and
// decoding rounds q, k, v and the exps as they do (see bf16); elsewhere
// the attention core stays in float32. The scratch may change: call it
// before ScratchSize.
func (a *Attention[F]) UseBF16(threads int) error {
	if err := a.proj.UseBF16(threads); err != nil {
		return err
	}
	a.infer16 = true
	return nil
}

// ActSize is q, k, v and the pre-projection output [B,T,D] each, plus the
// per-row log-sum-exp [B,H,T]. With 16-bit storage the four [B,T,D]
// tensors take half as many elements (two 16-bit values per float32).
func (a *Attention[F]) ActSize(b, t int) int {
	if a.store16 {
		return (4*b*t*a.D+1)/2 + b*a.H*t
	}
	return 4*b*t*a.D + b*a.H*t
}

// ScratchSize is dout·Wo, dq, dk, dv [B,T,D] each, the per-head transposed
// copies of k and v (about B·T·D each, twice with a Stride), the gathered
// copies (see gather.go), the head-major copies (three [B,T,D], see
// heads.go; none in bf16), one [B,H,T] vector, and two score tiles per
// thread of the budget (with heads of at most MaxNarrowHead channels, also
// its transposed dK and dV buffers); with 16-bit storage, also the float32
// working copies of q, k, v and o [B,T,D] each.
func (a *Attention[F]) ScratchSize(b, t, threads int) int {
	n := 4*b*t*a.D + 2*tcopySize(b, t, a.D, a.Stride) + gbufSize(b, a.H, a.Dh, a.gatherLen(t)) +
		a.headMajorSize(b, t) + b*a.H*t + mixer.Budget(threads)*(workerSize(a.tiles())+a.transGradSize(t))
	if a.store16 {
		n += 4 * b * t * a.D
	}
	return n
}

func (a *Attention[F]) gatherLen(t int) int {
	if g, ok := a.Pat.(Gatherer); ok {
		return g.GatherLen(t)
	}
	return 0
}

// split carves scratch into dout·Wo, dq [B,T,D], the key sources (with dk,
// dv), the [B,H,T] vector and the worker tiles. The head-major copies' room
// is hm (nil without them), three [B,T,D].
func (a *Attention[F]) split(scratch, k, v []F, p mixer.Pass) (do, dq []F, ks *keySrc[F], hm, vec, work []F) {
	n := p.B * p.T * a.D
	do, dq = scratch[:n], scratch[n:2*n]
	ks = &keySrc[F]{k: k, v: v, dk: scratch[2*n : 3*n], dv: scratch[3*n : 4*n], panels: !a.plain, tg: a.transGradSize(p.T)}
	off := 4 * n
	nt := tcopySize(p.B, p.T, a.D, a.Stride)
	ks.kt = newTCopy(scratch[off:off+nt], p.B, p.T, a.D, a.Stride)
	ks.vt = newTCopy(scratch[off+nt:off+2*nt], p.B, p.T, a.D, a.Stride)
	off += 2 * nt
	ng := a.gatherLen(p.T)
	gs := gbufSize(p.B, a.H, a.Dh, ng)
	ks.g = newGBuf(scratch[off:off+gs], p.B, a.H, a.Dh, ng)
	off += gs
	if nh := a.headMajorSize(p.B, p.T); nh > 0 {
		hm = scratch[off : off+nh]
		off += nh
	}
	vec = scratch[off : off+p.B*a.H*p.T]
	if a.Slopes != nil {
		ks.bias, ks.biasN = a.biasTable(p.T), a.bT
	}
	return do, dq, ks, hm, vec, scratch[off+p.B*a.H*p.T:]
}

func (a *Attention[F]) dims(p mixer.Pass) dims {
	s := a.Stride
	if s <= 1 {
		s = 0
	}
	prec, round := a.proj.Prec, a.roundBF16()
	switch {
	case round:
		prec = kernels.PrecFP32
	case a.bf16():
		prec = kernels.PrecBF16
	}
	return dims{B: p.B, T: p.T, D: a.D, H: a.H, Dh: a.Dh, scale: 1 / math.Sqrt(float64(a.Dh)), s: s, slopes: a.Slopes, prec: prec,
		round: round, threads: mixer.Budget(p.Threads)}
}

func (a *Attention[F]) layouts(T int) []*Layout {
	if cap(a.lays) < a.H {
		a.lays = make([]*Layout, a.H)
	}
	a.lays = a.lays[:a.H]
	for h := range a.lays {
		a.lays[h] = a.Pat.Layout(h, T, a.tiles())
	}
	return a.lays
}

// acts returns q, k, v, o [B,T,D] and lse [B,H,T], and the rest of
// scratch. With 16-bit storage q, k, v and o are float32 working copies at
// the start of scratch, and act16 views their stored bits, [4·B·T·D].
func (a *Attention[F]) acts(act, scratch []F, p mixer.Pass) (q, k, v, o, lse, rest []F, act16 []uint16) {
	n := p.B * p.T * a.D
	nl := p.B * a.H * p.T
	if !a.store16 {
		return act[:n], act[n : 2*n], act[2*n : 3*n], act[3*n : 4*n], act[4*n : 4*n+nl], scratch, nil
	}
	m := (4*n + 1) / 2
	act16 = kernels.Uint16s(any(act[:m]).([]float32))[:4*n]
	return scratch[:n], scratch[n : 2*n], scratch[2*n : 3*n], scratch[3*n : 4*n], act[m : m+nl], scratch[4*n:], act16
}

// packsStored says whether a pass's headPacks are made from the stored
// bf16 q, k, v (headPacks.fill's rows): the products run on packs, and
// act16 holds bf16 values they can be made from.
func (a *Attention[F]) packsStored(act16 []uint16, d dims) bool {
	return a.packs() && packsRows(a.stored16(act16), d)
}

// stored16 returns the stored q, k, v (and o) of act16 as bf16 values
// when they are stored in bf16, else nil.
func (a *Attention[F]) stored16(act16 []uint16) []kernels.BF16 {
	if !a.store16 || a.f16 != kernels.StoreBF16 {
		return nil
	}
	return kernels.AsBF16(act16)
}

// keep16 rounds x, the i-th of q, k, v, o, to the 16-bit format in place
// and stores it in act16, on at most threads threads.
func (a *Attention[F]) keep16(threads int, act16 []uint16, i int, x []F) {
	n := len(x)
	a.f16.Keep(threads, act16[i*n:(i+1)*n], any(x).([]float32))
}

// Forward writes out [B,T,D] from x [B,T,D]. With Rope, q and k are
// rotated right after their projections, and act keeps them rotated. With
// 16-bit storage, q, k and v are rounded to the format before the attention core reads them,
// and o before the output projection, so that Backward, which reads them
// back from act, sees exactly the values Forward used.
func (a *Attention[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	N := p.B * p.T
	d := a.dims(p)
	th := d.threads
	q, k, v, o, lse, scratch, act16 := a.acts(act, scratch, p)
	// The input is packed once for q, k and v, in dout·Wo's room (free
	// in forward).
	xa, shared := a.packedA(th, x, scratch[:N*a.D], N)
	for i, y := range [3][]F{q, k, v} {
		if shared {
			a.proj.ForwardPacked(th, pq+i, y, &xa, N)
		} else {
			a.proj.Forward(th, pq+i, y, x, N)
		}
		if i < 2 {
			RopeApply(a.Rope, th, y, p.B, p.T, false)
		}
		if a.store16 { // while the product's output is in cache
			a.keep16(th, act16, i, y)
		}
	}
	_, _, ks, hm, l, work := a.split(scratch, k, v, p)
	if hm != nil {
		ks.vh = hm[:len(v)]
		fillHeads(ks.vh, v, d)
	}
	if ks.hp = a.bf16Packs(); ks.hp != nil {
		defer packPool.put(ks.hp)
		ks.hp.fill(any(q).([]float32), any(k).([]float32), any(v).([]float32), nil, a.stored16(act16), d, false)
	}
	forward(o, lse, l, ks, work, q, a.layouts(p.T), d, p, a.tiles(), &a.units)
	if a.store16 {
		a.keep16(th, act16, 3, o)
	}
	if oa, ok := a.storedRows(act16, 3, N); ok && a.proj.PacksInput(po) { // o's stored rows, read in place
		a.proj.ForwardPacked(th, po, out, &oa, N)
		return
	}
	a.proj.Forward(th, po, out, o, N)
}

// sharedInput says whether the q, k and v projections all multiply their
// input in bf16, so that it can be packed once for the three.
func (a *Attention[F]) sharedInput() bool {
	return a.proj.PacksInput(pq) && a.proj.PacksInput(pk) && a.proj.PacksInput(pv)
}

// packedA packs x [N,D] in bf16 into room (float32 values, at least N·D)
// when the q, k and v projections all multiply their input in bf16, and
// says whether it did.
func (a *Attention[F]) packedA(threads int, x, room []F, N int) (kernels.BF16A, bool) {
	if !a.sharedInput() {
		return kernels.BF16A{}, false
	}
	buf := kernels.AsBF16(kernels.Uint16s(any(room).([]float32)))
	if kernels.PackedSizeA(N, a.D) > len(buf) {
		return kernels.BF16A{}, false
	}
	xa := kernels.BF16A{Data: buf}
	kernels.PackBF16A(threads, &xa, false, N, a.D, any(x).([]float32), a.D)
	return xa, true
}

// packedB is packedA for x as op(B) of the projections' weight gradients.
func (a *Attention[F]) packedB(threads int, x, room []F, N int) (kernels.BF16B, bool) {
	if !a.sharedInput() {
		return kernels.BF16B{}, false
	}
	buf := kernels.AsBF16(kernels.Uint16s(any(room).([]float32)))
	if kernels.PackedSizeB(N, a.D) > len(buf) {
		return kernels.BF16B{}, false
	}
	xb := kernels.BF16B{Data: buf}
	kernels.PackBF16B(threads, &xb, false, N, a.D, any(x).([]float32), a.D)
	return xb, true
}

// storedRows returns the i-th of q, k, v, o as stored in bf16 rows of
// act16, as a packed A [N,D] read in place, when they are stored in bf16
// in that layout.
func (a *Attention[F]) storedRows(act16 []uint16, i, N int) (kernels.BF16A, bool) {
	s := a.stored16(act16)
	if s == nil {
		return kernels.BF16A{}, false
	}
	n := N * a.D
	return kernels.RowsA(N, a.D, s[i*n:(i+1)*n])
}

// Backward accumulates into dx [B,T,D] and the parameter gradients.
func (a *Attention[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	N := p.B * p.T
	d := a.dims(p)
	th := d.threads
	q, k, v, o, lse, scratch, act16 := a.acts(act, scratch, p)
	lay := a.layouts(p.T)
	switch {
	case a.packsStored(act16, d) && packsEvery(lay):
		// Every product reads the packs made from the stored bits: only
		// o (for the row sums D_i) is needed in float32.
		n := len(q)
		a.f16.Load(th, any(o).([]float32), act16[3*n:4*n])
	case a.store16: // q, k, v, o are adjacent in scratch, as in act16
		a.f16.Load(th, any(q[:4*len(q)]).([]float32), act16)
	}
	do, dq, ks, hm, drow, work := a.split(scratch, k, v, p)
	dk, dv := ks.dk, ks.dv
	if s16 := a.stored16(act16); s16 != nil && a.proj.PacksInput(po) && kernels.PackedSizeB(N, a.D) <= 2*len(dq) {
		// o's weight gradient reads its stored rows paired, packed in
		// dq's room (free until the core's backward).
		n := N * a.D
		ob := kernels.BF16B{Data: kernels.AsBF16(kernels.Uint16s(any(dq).([]float32)))}
		kernels.PackBF16BRows(th, &ob, N, a.D, s16[3*n:4*n], a.D)
		a.proj.BackwardPacked(th, po, do, dout, &ob, N, true)
	} else {
		a.proj.Backward(th, po, do, dout, o, N, true)
	}
	if hm != nil {
		n := len(q)
		ks.qh, ks.kh, ks.doh = hm[:n], hm[n:2*n], hm[2*n:3*n]
		fillHeads(ks.qh, q, d)
		fillHeads(ks.kh, k, d)
		fillHeads(ks.doh, do, d)
	}
	pclear(th, dq)
	pclear(th, dk)
	pclear(th, dv)
	if ks.hp = a.bf16Packs(); ks.hp != nil {
		defer packPool.put(ks.hp)
		ks.hp.fill(any(q).([]float32), any(k).([]float32), any(v).([]float32), any(do).([]float32), a.stored16(act16), d, true)
	}
	backward(dq, drow, ks, work, do, o, lse, q, lay, d, p, a.tiles(), &a.units)
	RopeApply(a.Rope, th, dq, p.B, p.T, true) // back through the rotation: its transpose
	RopeApply(a.Rope, th, dk, p.B, p.T, true)
	// The input is packed once for the three weight gradients, in dout·Wo's
	// room (free after the core's backward).
	if xb, ok := a.packedB(th, x, do, N); ok {
		a.proj.BackwardPacked(th, pq, dx, dq, &xb, N, false)
		a.proj.BackwardPacked(th, pk, dx, dk, &xb, N, false)
		a.proj.BackwardPacked(th, pv, dx, dv, &xb, N, false)
		return
	}
	a.proj.Backward(th, pq, dx, dq, x, N, false)
	a.proj.Backward(th, pk, dx, dk, x, N, false)
	a.proj.Backward(th, pv, dx, dv, x, N, false)
}

// bf16 says whether the score and value products run in bf16: a float32
// mixer in precision bf16, or in bf16 inference (UseBF16) with a dense
// pattern (full attention, whose decoding rounds as its forward does) on
// a path that packs its operands (not kernels.BF16Widens). Its passes
// then make no head-major copies and run on TilesBF16 where set, so in
// bf16 inference the scratch depends on the path: a pass must run on the
// path its plan was made on.
func (a *Attention[F]) bf16() bool {
	var z F
	if _, ok := any(z).(float32); !ok {
		return false
	}
	if a.proj.Prec == kernels.PrecBF16 {
		return true
	}
	d, dense := a.Pat.(Denser)
	return a.infer16 && dense && d.Dense() && !kernels.BF16Widens()
}

// tiles are the block sizes of the passes: TilesBF16 when set and the
// products run in bf16, else Tiles.
func (a *Attention[F]) tiles() Tiles {
	if a.TilesBF16 != (Tiles{}) && a.bf16() {
		return a.TilesBF16
	}
	return a.Tiles
}

// roundBF16 says whether the bf16 products multiply operands rounded in
// place in float32 (dims.round): on a kernels path that widens bf16
// values anyway, packing them would only cost time.
func (a *Attention[F]) roundBF16() bool {
	return a.proj.Prec == kernels.PrecBF16 && a.bf16() && !a.unpacked && kernels.BF16Widens()
}

// bf16Packs returns a store for the packed operands, from packPool (the
// caller puts it back), when the score and value products run in bf16 on
// packed operands (bf16, not roundBF16), else nil.
func (a *Attention[F]) bf16Packs() *headPacks {
	if !a.packs() {
		return nil
	}
	return packPool.get()
}

// packs says whether the score and value products run on operands packed
// once per pass (headPacks): in bf16, and not roundBF16.
func (a *Attention[F]) packs() bool {
	return a.bf16() && !a.unpacked && !a.roundBF16()
}

// pclear zeroes x on at most threads threads (the kernels accumulate into
// large [B,T,D] buffers).
func pclear[F kernels.Float](threads int, x []F) {
	parallel.For(threads, len(x), 1<<16, func(_, lo, hi int) { clear(x[lo:hi]) })
}

// Connectivity returns head h's visited query–key pairs at length T as a
// [T,T] row-major matrix (query rows, key columns), read from the kernel's
// layout, so a picture of it shows what the kernels compute (padding aside).
func (a *Attention[F]) Connectivity(h, T int) []bool {
	m := make([]bool, T*T)
	a.Pat.Layout(h, T, a.tiles()).Each(func(i, j int) { m[i*T+j] = true })
	return m
}
