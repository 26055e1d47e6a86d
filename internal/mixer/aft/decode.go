package aft

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
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
		s.keep = a.S
	case vFull:
		s.keep = maxLen
	}
	s.k, s.v = make([]F, s.keep*D), make([]F, s.keep*D)
	return s
}

// Decode implements mixer.Decoder for causal AFT: out [n,D] for the next n
// positions' inputs x [n,D]. Each position costs O(D) for aft_simple,
// O(S·D) for aft_local and aft_conv and O(t·D) for aft_full.
func (a *AFT[F]) Decode(out, x []F, st mixer.State, n int) error {
	states, err := mixer.RepeatState(st, n, func(s *decodeState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, states)
}

// DecodeBatch implements mixer.BatchDecoder: one next position for each of
// several sequences, with the projections over all of them at once.
func (a *AFT[F]) DecodeBatch(out, x []F, states []mixer.State) error {
	ss, err := mixer.BatchStates(states, func(s *decodeState[F]) int { return s.max })
	if err != nil {
		return err
	}
	return a.decodeRows(out, x, ss)
}

// decodeWork is one decodeRows call's workspace.
type decodeWork[F kernels.Float] struct {
	q, k, v, y, e []F
	mx, num, den  []float64
}

var decodePool sync.Pool

// decodeRows decodes row r of x as the next position of states[r] (one
// state may take several consecutive rows).
func (a *AFT[F]) decodeRows(out, x []F, states []*decodeState[F]) error {
	if !a.Causal {
		return fmt.Errorf("aft: decoding needs a causal mixer")
	}
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
	if len(w.e) != D {
		w.e, w.mx, w.num, w.den = make([]F, D), make([]float64, D), make([]float64, D), make([]float64, D)
	}
	kernels.Linear(w.q, x, a.w[0], a.w[1], n, D, D)
	sigmoid(w.q)
	kernels.Linear(w.k, x, a.w[2], a.w[3], n, D, D)
	kernels.Linear(w.v, x, a.w[4], a.w[5], n, D, D)
	bias, _ := a.bias()
	for r, s := range states {
		t := s.n
		k, v := w.k[r*D:(r+1)*D], w.v[r*D:(r+1)*D]
		switch {
		case s.keep == 0: // aft_simple: position t goes straight into the sums
			s.addToSums(k, v)
		case a.v != vFull && t >= s.keep:
			// Position t−keep leaves the bias's reach (its weight is 0 from
			// now on) and joins the sums; its ring row takes position t.
			row := (t % s.keep) * D
			s.addToSums(s.k[row:row+D], s.v[row:row+D])
		}
		if s.keep > 0 {
			copy(s.k[(t%s.keep)*D:], k)
			copy(s.v[(t%s.keep)*D:], v)
		}
		lo := max(t-s.keep+1, 0) // the positions the bias reaches: (t−keep, t]
		if s.keep == 0 {
			lo = t + 1
		}
		// num = Σ_{j out of reach} exp(K_j)·V_j + Σ_{j in reach} exp(K_j + w_tj)·V_j,
		// every term shifted per channel by M, the largest exponent; den
		// likewise. The window's exponentials run over whole rows.
		mx, num, den, e := w.mx, w.num, w.den, w.e
		copy(mx, s.m)
		for j := lo; j <= t; j++ {
			kj := s.k[(j%s.keep)*D : (j%s.keep+1)*D]
			a.biasRow(e, bias, t, j)
			for c := range D {
				mx[c] = math.Max(mx[c], float64(kj[c]+e[c]))
			}
		}
		for c := range D {
			f := math.Exp(s.m[c] - mx[c]) // 0 while the sums are empty (m = −Inf)
			num[c], den[c] = f*s.num[c], f*s.den[c]
		}
		for j := lo; j <= t; j++ {
			kj, vj := s.k[(j%s.keep)*D:(j%s.keep+1)*D], s.v[(j%s.keep)*D:(j%s.keep+1)*D]
			a.biasRow(e, bias, t, j)
			for c := range D {
				e[c] = kj[c] + e[c] - F(mx[c])
			}
			kernels.Exp(e, e)
			for c, ec := range e {
				num[c] += float64(ec) * float64(vj[c])
				den[c] += float64(ec)
			}
		}
		y := w.y[r*D : (r+1)*D]
		for c := range D {
			y[c] = w.q[r*D+c] * F(num[c]/den[c])
		}
		s.n++
	}
	kernels.Linear(out[:n*D], w.y, a.w[6], a.w[7], n, D, D)
	return nil
}

// addToSums adds a position's exp(K)⊙V and exp(K) to the running sums,
// with the running-maximum rule.
func (s *decodeState[F]) addToSums(k, v []F) {
	for c := range k {
		kc := float64(k[c])
		if kc > s.m[c] {
			f := math.Exp(s.m[c] - kc)
			s.num[c] *= f
			s.den[c] *= f
			s.m[c] = kc
		}
		e := math.Exp(kc - s.m[c])
		s.num[c] += e * float64(v[c])
		s.den[c] += e
	}
}

// biasRow writes w[t,j] of every channel into dst [D] for a causal key
// j ≤ t in the bias's reach.
func (a *AFT[F]) biasRow(dst, bias []F, t, j int) {
	switch a.v {
	case vFull, vLocal:
		b := bias[t*a.MaxLen+j]
		for c := range dst {
			dst[c] = b
		}
	case vConv:
		for h := range a.H {
			b := bias[h*a.S+t-j]
			for c := h * a.Dh; c < (h+1)*a.Dh; c++ {
				dst[c] = b
			}
		}
	default:
		clear(dst)
	}
}
