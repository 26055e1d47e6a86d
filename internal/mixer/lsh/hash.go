package lsh

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/mixer"
)

// hashRows is the number of tokens hashed per GEMM (bounds the projection
// buffer to hashRows·NB/2 instead of T·NB/2).
const hashRows = 64

// work is one slot's scratch for one (batch, head) item; every field is a
// view into the mixer's scratch slab.
//
// C is the most chunks a round can have: Σ_b ⌈n_b/bucket_size⌉ ≤ T/bucket_size + NB.
type work[F kernels.Float] struct {
	m            *LSH[F]
	t, nb, c, cb int // T, NB, C, chunk length min(bucket_size, T)
	used         int // slot size in elements

	// Hash tables, int32 views of the slab.
	chunkOf []int32 // [T,R] chunk of token t in round r (−1: padding)
	prevOf  []int32 // [T,R] the chunk that token t's round-r chunk also attends to, or −1
	order   []int32 // [R,T] non-pad tokens sorted by (bucket, position)
	start   []int32 // [R,C+1] chunk c of round r is order[r·T+start[c] : r·T+start[c+1]]
	prev    []int32 // [R,C] the other chunk that chunk c attends to, or −1
	nchunk  []int32 // [R]
	other   []int32 // [T] 1 if token t has a key other than itself in some round
	bucket  []int32 // [T] this round's buckets (−1: padding)
	count   []int32 // [NB+1] counting-sort cursors
	sigC    []int32 // [T,R] chunkOf of the current round's sorted rows
	sigP    []int32 // [T,R] prevOf of the current round's sorted rows

	rot  []F // [dh, NB/2] random rotation
	proj []F // [hashRows, NB/2]
	k    []F // [T,dh] unit keys
	rn   []F // [T] 1/‖qk‖ per token

	// Token order: forward running softmax (acc, mx, l) or backward
	// accumulators (dq, dk w.r.t. the unit key, dv) and dd = dout·att.
	acc, mx, l []F // [T,dh], [T], [T]
	dq, dk, dv []F // [T,dh]
	dd         []F // [T]

	// Sorted order of the current round (row a is token order[r·T+a]), so
	// that every chunk and its previous chunk are row ranges.
	qs, ks, vs, os []F // [T,dh] queries, unit keys, values; round output or dO
	dqs, dks, dvs  []F // [T,dh] backward
	rm, rl         []F // [T] round row max and row sum (forward)

	s, dp []F // [cb,2cb] logits / probabilities and dP / dS of one chunk
}

// arena hands out consecutive pieces of buf; with buf nil it only counts.
type arena[F kernels.Float] struct {
	buf []F
	off int
}

func (a *arena[F]) take(n int) []F {
	a.off += n
	if a.buf == nil {
		return nil
	}
	return a.buf[a.off-n : a.off : a.off]
}

func (a *arena[F]) ints(n int) []int32 {
	s := a.take(n)
	if s == nil {
		return nil
	}
	return int32s(s, n)
}

// carve lays out one work slot for sequence length t in buf (nil: count only).
func (m *LSH[F]) carve(buf []F, t int) work[F] {
	a := arena[F]{buf: buf}
	w := work[F]{m: m, t: t, nb: m.NBuckets(t)}
	w.c = t/m.bucketSize + w.nb
	w.cb = min(m.bucketSize, t)
	R, dh, half, cb := m.nHashes, m.dh, w.nb/2, w.cb
	w.chunkOf = a.ints(t * R)
	w.prevOf = a.ints(t * R)
	w.order = a.ints(R * t)
	w.start = a.ints(R * (w.c + 1))
	w.prev = a.ints(R * w.c)
	w.nchunk = a.ints(R)
	w.other = a.ints(t)
	w.bucket = a.ints(t)
	w.count = a.ints(w.nb + 1)
	w.sigC = a.ints(t * R)
	w.sigP = a.ints(t * R)
	w.rot = a.take(dh * half)
	w.proj = a.take(min(hashRows, t) * half)
	w.k = a.take(t * dh)
	w.rn = a.take(t)
	w.acc, w.mx, w.l = a.take(t*dh), a.take(t), a.take(t)
	w.dq, w.dk, w.dv = a.take(t*dh), a.take(t*dh), a.take(t*dh)
	w.dd = a.take(t)
	w.qs, w.ks, w.vs, w.os = a.take(t*dh), a.take(t*dh), a.take(t*dh), a.take(t*dh)
	w.dqs, w.dks, w.dvs = a.take(t*dh), a.take(t*dh), a.take(t*dh)
	w.rm, w.rl = a.take(t), a.take(t)
	w.s, w.dp = a.take(2*cb*cb), a.take(2*cb*cb)
	w.used = a.off
	return w
}

func (m *LSH[F]) slotSize(t int) int { return m.carve(nil, t).used }

// Rotation fills dst [dh, NB/2] with the random rotation of round r and
// head h: entry i is rotationNormal(rotationKey(seed, stream), i) with
// stream = layer<<40 | r<<24 | h (docs/model.md, "LSH rotations"). It depends
// only on (seed, layer, r, h), never on call order, so Backward and a
// reversible recomputation draw the same matrix, and any port that follows
// the contract draws the same float64 values bit for bit.
func (m *LSH[F]) Rotation(dst []F, seed uint64, r, h, nb int) {
	key := rotationKey(seed, uint64(m.layer)<<40|uint64(r)<<24|uint64(h))
	for i := range dst[:m.dh*nb/2] {
		dst[i] = F(rotationNormal(key, uint64(i)))
	}
}

// rotationKey is the key of the counter-based stream (seed, stream):
// splitmix(splitmix(seed) XOR stream), with splitmix = mixer.SplitMix.
func rotationKey(seed, stream uint64) uint64 { return mixer.SplitMix(mixer.SplitMix(seed) ^ stream) }

// rotationNormal is draw i of the stream with key: the twelve 32-bit halves
// of the words splitmix(key + c), c = 6i … 6i+5, summed as integers S, and
// (S − 6·2³²)/2³². That is the Irwin–Hall approximation of N(0,1) (mean 0,
// variance 1, support [−6, 6]); it is integer arithmetic and one exact
// conversion, so every language gets the same bits. (Box–Muller needs log
// and cos, whose last bit differs between math libraries.)
func rotationNormal(key, i uint64) float64 {
	var s uint64
	for c := 6 * i; c < 6*i+6; c++ {
		w := mixer.SplitMix(key + c)
		s += w&0xffffffff + w>>32
	}
	return float64(int64(s)-6<<32) / (1 << 32)
}

// hash assigns every non-pad token of sequence b, head h to a bucket in each
// round, sorts by (bucket, position) and cuts each bucket's run into chunks
// of bucket_size, filling the tables of w. qk is the shared projection
// [B,T,D]; hashing the unnormalised vector gives the same bucket as hashing
// the unit key.
func (w *work[F]) hash(qk []F, b, h int, p mixer.Pass) {
	m := w.m
	T, D, dh, nb, half, bs := w.t, m.d, m.dh, w.nb, w.nb/2, m.bucketSize
	clear(w.other)
	for r := 0; r < m.nHashes; r++ {
		m.Rotation(w.rot, p.Seed, r, h, nb)
		for lo := 0; lo < T; lo += hashRows {
			rows := min(hashRows, T-lo)
			kernels.Gemm(1, kernels.PrecFP32, false, false, rows, half, dh, 1, qk[(b*T+lo)*D+h*dh:], D, w.rot, half, 0, w.proj, half)
			for a := range rows {
				t := lo + a
				if !p.Allowed(b, t) {
					w.bucket[t] = -1
					continue
				}
				// argmax of [xR; −xR]; the first maximum wins.
				row := w.proj[a*half : (a+1)*half]
				best, arg := F(math.Inf(-1)), 0
				for j, x := range row {
					if x > best {
						best, arg = x, j
					}
				}
				for j, x := range row {
					if -x > best {
						best, arg = -x, half+j
					}
				}
				w.bucket[t] = int32(arg)
			}
		}

		// Counting sort by bucket, stable in position.
		cnt := w.count[:nb+1]
		clear(cnt)
		for _, k := range w.bucket {
			if k >= 0 {
				cnt[k+1]++
			}
		}
		for k := 1; k <= nb; k++ {
			cnt[k] += cnt[k-1]
		}
		ord := w.order[r*T : (r+1)*T]
		for t, k := range w.bucket {
			if k >= 0 {
				ord[cnt[k]] = int32(t)
				cnt[k]++
			}
		}
		// Now bucket k spans ord[cnt[k-1]:cnt[k]] (cnt[-1] = 0).

		cs := w.start[r*(w.c+1) : (r+1)*(w.c+1)]
		pv := w.prev[r*w.c : (r+1)*w.c]
		R := m.nHashes
		for t, k := range w.bucket {
			if k < 0 {
				w.chunkOf[t*R+r], w.prevOf[t*R+r] = -1, -1
			}
		}
		c, lo := 0, int32(0)
		for k := 0; k < nb; k++ {
			hi := cnt[k]
			first := c
			for s := lo; s < hi; s += int32(bs) {
				cs[c] = s
				pv[c] = int32(c - 1)
				if c == first {
					pv[c] = -1
				}
				for _, t := range ord[s:min(s+int32(bs), hi)] {
					w.chunkOf[int(t)*R+r] = int32(c)
				}
				c++
			}
			// Bidirectional: the first chunk of a bucket wraps around to
			// the bucket's last chunk (Reformer's look-one-back, per bucket).
			if !m.causal && c-first >= 2 {
				pv[first] = int32(c - 1)
			}
			lo = hi
		}
		cs[c] = lo
		w.nchunk[r] = int32(c)

		// A token has another key in this round if its window holds a
		// non-pad token other than itself that the causal mask allows.
		for ci := 0; ci < c; ci++ {
			mem := ord[cs[ci]:cs[ci+1]]
			np := int32(0)
			if q := pv[ci]; q >= 0 {
				np = cs[q+1] - cs[q]
			}
			for a, t := range mem {
				w.prevOf[int(t)*R+r] = pv[ci]
				if np > 0 || (m.causal && a > 0) || (!m.causal && len(mem) > 1) {
					w.other[t] = 1
				}
			}
		}
	}
}
