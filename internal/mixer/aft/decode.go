package aft

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
	"github.com/tokenmix/tokenmix/mixer"
)

// decodeState is one causal sequence's AFT decoding state: the K and V
// rows the position bias still reaches (none for aft_simple, the last S for
// aft_local and aft_conv in a ring, all of them for aft_full) and, per
// channel, the running sums of exp(K)⊙V and exp(K) of the positions beyond
// its reach (w = 0 there) relative to their running maximum m: O(D)
// whatever the length.
type decodeState[F kernels.Float] struct {
	n, max      int
	m, num, den []float64 // [D]
	k, v        []F       // [keep, D] rows, position j at row j % keep
	keep        int       // rows kept (0, S, or max)
}

func (s *decodeState[F]) Len() int { return s.n }

// Bytes is the state's memory: the running sums and the kept rows (not
// the work rows of the last Decode call).
func (s *decodeState[F]) Bytes() int64 {
	var z F
	return 8*int64(len(s.m)+len(s.num)+len(s.den)) + int64(unsafe.Sizeof(z))*int64(cap(s.k)+cap(s.v))
}

// StateBytes implements mixer.StateSizer: the running sums and the keys
// and values of the positions a state keeps, allocated by NewState.
func (a *AFT[F]) StateBytes(maxLen, _ int) int64 {
	var z F
	keep := 0
	switch a.v {
	case vLocal, vConv:
		keep = min(a.S, max(maxLen, 1))
	case vFull:
		keep = maxLen
	}
	return 8*3*int64(a.D) + int64(unsafe.Sizeof(z))*2*int64(keep*a.D)
}

// NewState returns the empty decoding state of a causal sequence of at
// most maxLen positions.
func (a *AFT[F]) NewState(maxLen int, _ uint64) mixer.State {
	D := a.D
	s := &decodeState[F]{max: maxLen, m: make([]float64, D), num: make([]float64, D), den: make([]float64, D)}
	for c := range s.m {
		s.m[c] = math.Inf(-1)
	}
	switch a.v {
	case vLocal, vConv:
		s.keep = min(a.S, max(maxLen, 1)) // positions are < maxLen: no older ones
	case vFull:
		s.keep = maxLen
	}
	s.k, s.v = make([]F, s.keep*D), make([]F, s.keep*D)
	return s
}

// Decode implements mixer.Decoder for causal AFT: out [n,D] for the next n
// positions' inputs x [n,D]. Each position costs O(D) for aft_simple,
// O(S·D) for aft_local and aft_conv and O(t·D) for aft_full; for those
// three a prompt (the first positions of a state, n > 1) runs as one
// Forward instead.
func (a *AFT[F]) Decode(out, x []F, st mixer.State, n, threads int) error {
	states, err := mixer.RepeatState(st, n, func(s *decodeState[F]) int { return s.max })
	if err != nil {
		return err
	}
	if s := states[0]; s.n == 0 && n > 1 && s.keep > 0 && a.Causal {
		a.prefill(out, x, s, n, threads)
		return nil
	}
	return a.decodeRows(out, x, states, threads)
}

// prefill decodes the first n positions of the empty state s with one
// causal Forward over them (the band GEMMs and blocked scans rather than n
// window scans), then leaves in s what those positions leave: the rows the
// bias still reaches, and the sums of the positions beyond its reach.
func (a *AFT[F]) prefill(out, x []F, s *decodeState[F], n, threads int) {
	D := a.D
	p := mixer.Pass{B: 1, T: n, Threads: mixer.Budget(threads)}
	na := a.ActSize(1, n)
	buf := make([]F, na+a.ScratchSize(1, n, p.Threads)+2*n*D)
	act, scratch, k, v := buf[:na], buf[na:len(buf)-2*n*D], buf[len(buf)-2*n*D:len(buf)-n*D], buf[len(buf)-n*D:]
	a.Forward(out[:n*D], act, scratch, x[:n*D], p)
	a.proj.Forward(p.Threads, pk, k, x, n)
	a.proj.Forward(p.Threads, pv, v, x, n)
	e := make([]F, D)
	for j := range n {
		kj, vj := k[j*D:(j+1)*D], v[j*D:(j+1)*D]
		if j < n-s.keep { // beyond the bias's reach from position n on
			if a.distant {
				s.addToSums(kj, vj, e)
			}
			continue
		}
		copy(s.k[(j%s.keep)*D:], kj)
		copy(s.v[(j%s.keep)*D:], vj)
	}
	s.n = n
}

// DecodeBatch implements mixer.BatchDecoder: one next position for each of
// several sequences, with the projections over all of them at once.
func (a *AFT[F]) DecodeBatch(out, x []F, states []mixer.State, threads int) error {
	ss, err := mixer.BatchStates(states, func(s *decodeState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, ss, threads)
}

// decodeWork is one decodeRows call's workspace: the projected rows, and
// one scratch per worker of the rows' parallel loop.
type decodeWork[F kernels.Float] struct {
	q, k, v, y []F
	scratch    []rowScratch[F]
}

// rowScratch is one worker's scratch for one row's sums.
type rowScratch[F kernels.Float] struct {
	e, wmx       []F
	mx, num, den []float64
}

var decodePool sync.Pool

// decodeRows decodes row r of x as the next position of states[r] (one
// state may take several consecutive rows, decoded in order; distinct
// states are decoded in parallel, on at most threads threads).
func (a *AFT[F]) decodeRows(out, x []F, states []*decodeState[F], threads int) error {
	if !a.Causal {
		return fmt.Errorf("aft: decoding needs a causal mixer")
	}
	th := mixer.Budget(threads)
	n, D := len(states), a.D
	w, ok := decodePool.Get().(*decodeWork[F])
	if !ok {
		w = &decodeWork[F]{}
	}
	defer decodePool.Put(w)
	for _, b := range []*[]F{&w.q, &w.k, &w.v, &w.y} {
		if cap(*b) < n*D {
			*b = make([]F, n*D)
		}
		*b = (*b)[:n*D]
	}
	for len(w.scratch) < th {
		w.scratch = append(w.scratch, rowScratch[F]{})
	}
	for i := range w.scratch {
		if sc := &w.scratch[i]; len(sc.e) != D {
			*sc = rowScratch[F]{e: make([]F, D), wmx: make([]F, D), mx: make([]float64, D), num: make([]float64, D), den: make([]float64, D)}
		}
	}
	a.proj.Forward(th, pq, w.q, x, n)
	sigmoid(th, w.q)
	a.proj.Forward(th, pk, w.k, x, n)
	a.proj.Forward(th, pv, w.v, x, n)
	bias, _ := a.bias()
	rows := func(worker, lo, hi int) {
		for r := lo; r < hi; r++ {
			a.decodeRow(w.y[r*D:(r+1)*D], w.q[r*D:(r+1)*D], w.k[r*D:(r+1)*D], w.v[r*D:(r+1)*D], bias, states[r], &w.scratch[worker])
		}
	}
	if n > 1 && states[0] == states[1] {
		rows(0, 0, n) // one sequence's consecutive positions
	} else {
		parallel.For(th, n, 1, rows)
	}
	a.proj.Forward(th, po, out, w.y, n)
	return nil
}

// decodeRow decodes the next position of s from its projected rows q
// (gated), k and v, and writes the output row y [D].
func (a *AFT[F]) decodeRow(y, q, k, v, bias []F, s *decodeState[F], sc *rowScratch[F]) {
	D, t := a.D, s.n
	if s.keep == 0 { // aft_simple: position t goes straight into the sums
		s.addToSums(k, v, sc.e)
		for c, qc := range q {
			y[c] = qc * F(s.num[c]/s.den[c])
		}
		s.n++
		return
	}
	if a.distant && t >= s.keep {
		// Position t−keep leaves the bias's reach (its weight is 0 from
		// now on) and joins the sums; its ring row takes position t.
		// Without distant tokens it leaves the sums empty.
		row := (t % s.keep) * D
		s.addToSums(s.k[row:row+D], s.v[row:row+D], sc.e)
	}
	copy(s.k[(t%s.keep)*D:], k)
	copy(s.v[(t%s.keep)*D:], v)
	lo := max(t-s.keep+1, 0) // the positions the bias reaches: (t−keep, t]
	// num = Σ_{j out of reach} exp(K_j)·V_j + Σ_{j in reach} exp(K_j + w_tj)·V_j,
	// every term shifted per channel by M, the largest exponent; den
	// likewise. The window's exponentials run over whole rows.
	mx, num, den, e, wmx := sc.mx, sc.num, sc.den, sc.e, sc.wmx
	H, Dh := a.H, a.Dh
	if lo <= t {
		// The window's largest exponent per channel, in F.
		for c := range wmx {
			wmx[c] = F(math.Inf(-1))
		}
		for j := lo; j <= t; j++ {
			kj := s.k[(j%s.keep)*D : (j%s.keep+1)*D]
			for h := range H {
				b, kh, mh := a.biasAt(bias, h, t, j), kj[h*Dh:(h+1)*Dh], wmx[h*Dh:(h+1)*Dh]
				for c, kc := range kh {
					mh[c] = max(mh[c], kc+b)
				}
			}
		}
	}
	for c := range D {
		mx[c] = s.m[c]
		if lo <= t {
			mx[c] = max(mx[c], float64(wmx[c]))
			wmx[c] = F(mx[c])
		}
		f := 1.0 // the sums' own maximum (always so for aft_simple)
		if s.m[c] != mx[c] {
			f = math.Exp(s.m[c] - mx[c]) // 0 while the sums are empty (m = −Inf)
		}
		num[c], den[c] = f*s.num[c], f*s.den[c]
	}
	for j := lo; j <= t; j++ {
		kj, vj := s.k[(j%s.keep)*D:(j%s.keep+1)*D], s.v[(j%s.keep)*D:(j%s.keep+1)*D]
		for h := range H {
			b, kh, mh, eh := a.biasAt(bias, h, t, j), kj[h*Dh:(h+1)*Dh], wmx[h*Dh:(h+1)*Dh], e[h*Dh:(h+1)*Dh]
			for c, kc := range kh {
				eh[c] = kc + b - mh[c]
			}
		}
		kernels.Exp(e, e)
		for c, ec := range e {
			num[c] += float64(ec) * float64(vj[c])
			den[c] += float64(ec)
		}
	}
	for c := range D {
		y[c] = q[c] * F(num[c]/den[c])
	}
	s.n++
}

// addToSums adds one position's key and value rows [D] to the running
// sums, moving a channel's maximum up when its key exceeds it. d [D] is
// scratch: the exponents, min(k−m, m−k) ≤ 0, go through one vector Exp.
func (s *decodeState[F]) addToSums(k, v, d []F) {
	m, num, den := s.m[:len(k)], s.num[:len(k)], s.den[:len(k)]
	v, d = v[:len(k)], d[:len(k)]
	for c, kc := range k {
		d[c] = F(-math.Abs(float64(kc) - m[c])) // −Inf while the sums are empty
	}
	kernels.Exp(d, d)
	for c, kc := range k {
		e, vc := float64(d[c]), float64(v[c])
		if float64(kc) > m[c] { // rescale the sums to the new maximum kc
			num[c] = num[c]*e + vc
			den[c] = den[c]*e + 1
			m[c] = float64(kc)
			continue
		}
		num[c] += e * vc
		den[c] += e
	}
}

// biasAt is w[t,j] of head h's channels for a causal key j ≤ t in the
// bias's reach: one value per head (aft_conv) or for all heads (aft_full,
// aft_local).
func (a *AFT[F]) biasAt(bias []F, h, t, j int) F {
	if a.v == vConv {
		return bias[h*a.S+t-j]
	}
	return bias[t*a.MaxLen+j]
}
