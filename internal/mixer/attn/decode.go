package attn

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/mixer/proj"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// Denser is implemented by patterns that may let every query see every
// earlier key; Dense reports whether this one does (full attention). A
// dense pattern's decoding state keeps its values transposed.
type Denser interface{ Dense() bool }

// KeyLister is implemented by patterns that list a causal query's allowed
// keys, so decoding visits only those (O(l + t/l) for strided) instead of
// asking Allow about every earlier position.
type KeyLister interface {
	// CausalKeys appends to dst the keys j ≤ i that query i of head h may
	// attend to, ascending, and returns it.
	CausalKeys(h, i int, dst []int) []int
}

// kvState is one causal sequence's key–value cache, per head: k[h] holds
// the keys as [positions, Dh] rows. A dense pattern (every query sees every
// earlier key) keeps the values transposed in vt[h], [Dh, cap] (row c holds
// channel c of every position), so that a query is two matrix–vector
// products, K·q then Vᵀ·p; a sparse one keeps them as rows in v[h], read
// at the few allowed positions.
type kvState[F kernels.Float] struct {
	n, max, cap int
	dense       bool
	k, v, vt    [][]F
}

func (s *kvState[F]) Len() int { return s.n }

// Bytes is the cache's memory: the keys and values held.
func (s *kvState[F]) Bytes() int64 {
	var z F
	var n int
	for h := range s.k {
		n += cap(s.k[h]) + cap(s.v[h]) + cap(s.vt[h])
	}
	return int64(unsafe.Sizeof(z)) * int64(n)
}

// kvBytes bounds a kvState's Bytes after n of at most maxLen positions:
// keys and values (or transposed values) of d channels, with the slack of
// kvState.append's growth (a quarter, at least 64 positions).
func kvBytes[F kernels.Float](d, maxLen, n int) int64 {
	var z F
	return int64(unsafe.Sizeof(z)) * 2 * int64(d) * int64(min(maxLen, n+max(n/4, 64)))
}

// StateBytes implements mixer.StateSizer.
func (a *Attention[F]) StateBytes(maxLen, n int) int64 { return kvBytes[F](a.D, maxLen, n) }

// NewState returns an empty key–value cache for a causal sequence of at
// most maxLen positions.
func (a *Attention[F]) NewState(maxLen int, _ uint64) mixer.State {
	s := &kvState[F]{max: maxLen, k: make([][]F, a.H), v: make([][]F, a.H), vt: make([][]F, a.H)}
	d, ok := a.Pat.(Denser)
	s.dense = ok && d.Dense() && a.Slopes == nil
	return s
}

// decodeWork is one decodeRows call's workspace; a pool keeps concurrent
// calls (on different sequences) apart. pos[r] is row r's position; heads
// has one scratch per worker of the (row, head) loop.
type decodeWork[F kernels.Float] struct {
	q, k, v, o []F
	pos        []int
	heads      []headScratch[F]
}

// headScratch is one worker's scratch for one query head: its scores, the
// rule's workspace and the allowed keys.
type headScratch[F kernels.Float] struct {
	sc, tmp []F
	keys    []int
	// stats are decodeTiles' running maximum, sum and factor α.
	stats [3]F
}

var decodePool sync.Pool

func getWork[F kernels.Float]() *decodeWork[F] {
	if w, ok := decodePool.Get().(*decodeWork[F]); ok {
		return w
	}
	return &decodeWork[F]{}
}

// regrow returns b's contents in a slice of capacity n ≥ len(b).
func regrow[F kernels.Float](b []F, n int) []F {
	nb := make([]F, len(b), n)
	copy(nb, b)
	return nb
}

func grow[F kernels.Float](b []F, n int) []F {
	if cap(b) < n {
		return make([]F, n)
	}
	return b[:n]
}

// Decode implements mixer.Decoder for a causal pattern: out [n,D] for the
// next n positions' inputs x [n,D]. Position t visits the cached keys and
// values its pattern allows (KeyLister, or Allow on every earlier
// position), O(allowed·D) arithmetic.
func (a *Attention[F]) Decode(out, x []F, st mixer.State, n, threads int) error {
	states, err := mixer.RepeatState(st, n, func(s *kvState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, states, threads)
}

// DecodeBatch implements mixer.BatchDecoder: one next position for each of
// several sequences, with the projections over all of them at once.
func (a *Attention[F]) DecodeBatch(out, x []F, states []mixer.State, threads int) error {
	ss, err := mixer.BatchStates(states, func(s *kvState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, ss, threads)
}

func (a *Attention[F]) decodeRows(out, x []F, states []*kvState[F], threads int) error {
	if !a.Causal {
		return fmt.Errorf("attn: decoding needs a causal pattern")
	}
	decodeRows(out, x, states, a.H, &a.proj, a.Rope, a.decodeHead, a.bf16(), threads)
	return nil
}

// decodeRows is the decoding step of every attention engine: row r of x
// is the next position of states[r] (one state may take several
// consecutive rows). ps holds the query, key, value and output
// projections, in that order, and rope (nil: none) rotates each row's query
// and key at its absolute position. The rows' keys and values join
// their caches first, in order; then every (row, head) pair attends in
// parallel through head, each reading its cache up to its own position,
// on at most threads threads (a budget as mixer.Pass.Threads).
func decodeRows[F kernels.Float](out, x []F, states []*kvState[F], H int, ps *proj.Set[F], rope *Rope, head func(o, q []F, s *kvState[F], i, h int, hs *headScratch[F]), round16 bool, threads int) {
	th := mixer.Budget(threads)
	n, D := len(states), ps.D
	Dh := D / H
	wk := getWork[F]()
	defer decodePool.Put(wk)
	wk.q, wk.k, wk.v, wk.o = grow(wk.q, n*D), grow(wk.k, n*D), grow(wk.v, n*D), grow(wk.o, n*D)
	if cap(wk.pos) < n {
		wk.pos = make([]int, n)
	}
	wk.pos = wk.pos[:n]
	for len(wk.heads) < th {
		wk.heads = append(wk.heads, headScratch[F]{})
	}
	ps.Forward(th, pq, wk.q, x, n)
	ps.Forward(th, pk, wk.k, x, n)
	ps.Forward(th, pv, wk.v, x, n)
	for r, s := range states {
		wk.pos[r] = s.n
		RopeRows(rope, wk.q[r*D:(r+1)*D], wk.pos[r:r+1])
		RopeRows(rope, wk.k[r*D:(r+1)*D], wk.pos[r:r+1])
		if round16 { // the bf16 values the forward's products read
			for _, y := range [3][]F{wk.q, wk.k, wk.v} {
				kernels.RoundBF16(1, any(y[r*D:(r+1)*D]).([]float32))
			}
		}
		s.append(wk.k[r*D:(r+1)*D], wk.v[r*D:(r+1)*D], H, Dh)
	}
	parallel.For(th, n*H, 1, func(worker, lo, hi int) {
		hs := &wk.heads[worker]
		for u := lo; u < hi; u++ {
			r, h := u/H, u%H
			head(wk.o[r*D+h*Dh:r*D+(h+1)*Dh], wk.q[r*D+h*Dh:r*D+(h+1)*Dh], states[r], wk.pos[r], h, hs)
		}
	})
	ps.Forward(th, po, out, wk.o, n)
}

// decodeHead writes head h's output o [Dh] for query q [Dh] at position i
// of the sequence whose cache s holds positions 0..i (and maybe later
// ones, not read), on the calling goroutine.
func (a *Attention[F]) decodeHead(o, q []F, s *kvState[F], i, h int, hs *headScratch[F]) {
	Dh := a.Dh
	scale := 1 / math.Sqrt(float64(Dh))
	kh := s.k[h]
	if s.dense {
		// Every earlier key: scores = K·q, o = Vᵀ·p.
		hs.sc = grow(hs.sc, i+1)
		sc := hs.sc
		kernels.Gemm(1, kernels.PrecFP32, false, true, 1, i+1, Dh, F(scale), q, Dh, kh, Dh, 0, sc, i+1)
		if a.bf16() {
			a.decodeTiles(o, sc, s.vt[h], s.cap, hs)
			return
		}
		sum := kernels.ExpSub(sc, sc, kernels.Max(sc))
		kernels.Scale(sc, 1/sum)
		kernels.Gemm(1, kernels.PrecFP32, false, true, 1, Dh, i+1, 1, sc, i+1, s.vt[h], s.cap, 0, o, Dh)
		return
	}
	hs.keys = hs.keys[:0]
	if lister, ok := a.Pat.(KeyLister); ok {
		hs.keys = lister.CausalKeys(h, i, hs.keys)
	} else {
		for j := 0; j <= i; j++ {
			if a.Pat.Allow(h, s.max, i, j) {
				hs.keys = append(hs.keys, j)
			}
		}
	}
	hs.sc = grow(hs.sc, len(hs.keys))
	sc := hs.sc
	// Scores by runs of consecutive keys (a pattern's local block is one):
	// one K·q product per run.
	for m0 := 0; m0 < len(hs.keys); {
		j0, m1 := hs.keys[m0], m0+1
		for m1 < len(hs.keys) && hs.keys[m1] == j0+m1-m0 {
			m1++
		}
		kernels.Gemm(1, kernels.PrecFP32, false, true, 1, m1-m0, Dh, F(scale), q, Dh, kh[j0*Dh:], Dh, 0, sc[m0:m1], m1-m0)
		m0 = m1
	}
	if a.Slopes != nil {
		for m, j := range hs.keys {
			sc[m] = F(float64(sc[m]) - a.Slopes[h]*float64(i-j))
		}
	}
	sum := kernels.ExpSub(sc, sc, kernels.Max(sc))
	clear(o)
	for m, j := range hs.keys {
		kernels.Axpy(o, sc[m]/sum, s.v[h][j*Dh:(j+1)*Dh])
	}
}

// decodeTiles finishes a dense decoding step in bf16 from the scores sc
// of every earlier key, as the forward's bf16 core does for that query:
// an online softmax over key tiles of tiles().K, each tile's exps
// rounded to bf16 before its value product (Vᵀ [Dh, ld] in vt), and the
// output divided by the sum at the end, so that decoding gives the
// forward's numbers (up to the order of the float32 sums). Its running
// statistics live in hs, so that a step allocates nothing.
func (a *Attention[F]) decodeTiles(o, sc, vt []F, ld int, hs *headScratch[F]) {
	tk, n := a.tiles().K, len(sc)
	hs.stats = [3]F{F(math.Inf(-1)), 0, 0}
	m, l, alpha := hs.stats[0:1], hs.stats[1:2], hs.stats[2:3]
	clear(o)
	for j0 := 0; j0 < n; j0 += tk {
		p := sc[j0:min(j0+tk, n)]
		kernels.OnlineSoftmax(p, 1, len(p), m, l, 1, alpha)
		kernels.Scale(o, alpha[0])
		kernels.RoundBF16(1, any(p).([]float32))
		kernels.Gemm(1, kernels.PrecFP32, false, true, 1, len(o), len(p), 1, p, len(p), vt[j0:], ld, 1, o, len(o))
	}
	kernels.Scale(o, 1/l[0])
}

// append adds one position's key and value rows [D] to the cache. The
// cache grows by a quarter of its positions (at least 64, at most to its
// length): at most a quarter of it is unused, and a sequence copies each
// row about four times over its life.
func (s *kvState[F]) append(k, v []F, H, Dh int) {
	if s.n+1 > s.cap {
		c := min(s.cap+max(s.cap/4, 64), s.max)
		for h := range H {
			s.k[h] = regrow(s.k[h], Dh*c)
			if !s.dense {
				s.v[h] = regrow(s.v[h], Dh*c)
				continue
			}
			vt := make([]F, Dh*c) // the transposed values: channel rows of c positions
			for ch := 0; ch < Dh && s.n > 0; ch++ {
				copy(vt[ch*c:ch*c+s.n], s.vt[h][ch*s.cap:ch*s.cap+s.n])
			}
			s.vt[h] = vt
		}
		s.cap = c
	}
	for h := range H {
		s.k[h] = append(s.k[h], k[h*Dh:(h+1)*Dh]...)
		if !s.dense {
			s.v[h] = append(s.v[h], v[h*Dh:(h+1)*Dh]...)
			continue
		}
		for ch := range Dh {
			s.vt[h][ch*s.cap+s.n] = v[h*Dh+ch]
		}
	}
	s.n++
}
