package fft

import (
	"sync"

	"tokenmix/kernels"
)

// RealPlan computes only the real part y = Re(DFT_n(z)) of complex sequences
// of even length n, with one complex transform of length M = n/2 (see the
// package doc). It is read-only after construction and safe for concurrent
// use.
type RealPlan[F kernels.Float] struct {
	n    int
	half *Plan[F]
	c, s []F // [M]: exp(+2πi·k/n)
}

var realCache sync.Map // planKey → *RealPlan[F]

// RealPlanFor returns the cached RealPlan of length n for element type F.
// RealPlanFor panics if n is odd or n < 2.
func RealPlanFor[F kernels.Float](n int) *RealPlan[F] {
	if n < 2 || n%2 != 0 {
		panic("fft: RealPlanFor needs an even length ≥ 2")
	}
	var zero F
	_, f64 := any(zero).(float64)
	k := planKey{n: n, f64: f64, kind: "re"}
	if v, ok := realCache.Load(k); ok {
		return v.(*RealPlan[F])
	}
	M := n / 2
	r := &RealPlan[F]{n: n, half: PlanFor[F](M), c: make([]F, M), s: make([]F, M)}
	for j := 0; j < M; j++ {
		c, s := angle(-j, n)
		r.c[j], r.s[j] = F(c), F(s)
	}
	v, _ := realCache.LoadOrStore(k, r)
	return v.(*RealPlan[F])
}

// Len returns the transform length n.
func (r *RealPlan[F]) Len() int { return r.n }

// ScratchLen returns the number of scratch elements Batch needs for w
// sequences.
func (r *RealPlan[F]) ScratchLen(w int) int {
	M := r.n / 2
	return 2*M*w + 2*r.half.BatchScratchLen(w)
}

// Batch computes y_q = Re(DFT_n(z_q)) for w complex sequences read as rows:
// element t of sequence q is (zr[t·ld+q], zi[t·ld+q]). It returns y as two
// [n/2, w] views into scratch, even[m·w+q] = y_q[2m] and
// odd[m·w+q] = y_q[2m+1]. zr and zi are not modified. Batch panics if
// w < 1, ld < w, a row lies outside zr or zi, or scratch is shorter than
// ScratchLen(w).
//
// y = Re(F z) = F u with u[t] = (z[t] + conj z[−t])/2 Hermitian, so y is
// real and y[j] = Σ_k X[k]·e^{+2πi·kj/n} with X = conj u. Splitting j into
// even and odd, y[2m] + i·y[2m+1] = Σ_{k<M} Z[k]·e^{+2πi·km/M} with
// Z = A + i·B, A[k] = X[k] + X[k+M] and B[k] = (X[k] − X[k+M])·e^{+2πi·k/n}:
// an inverse DFT of length M, computed as a forward one on swapped real and
// imaginary parts (IDFT(Z) = swap(DFT(swap Z))).
func (r *RealPlan[F]) Batch(zr, zi []F, ld, w int, scratch []F) (even, odd []F) {
	if w < 1 || ld < w {
		panic("fft: RealPlan.Batch needs 1 ≤ w ≤ ld")
	}
	n, M := r.n, r.n/2
	zr, zi = zr[:(n-1)*ld+w], zi[:(n-1)*ld+w]
	scratch = scratch[:r.ScratchLen(w)]
	// sr, si hold swap(Z): sr = Im Z, si = Re Z.
	sr, si := scratch[:M*w], scratch[M*w:2*M*w]
	body := 0
	if useAsm[F]() {
		body = w &^ (vecLanes - 1)
	}
	for k := 0; k < M; k++ {
		n1, n2 := (n-k)%n, M-k // −k and −(k+M) mod n
		c, s := r.c[k], r.s[k]
		r0, i0 := zr[k*ld:k*ld+w], zi[k*ld:k*ld+w]
		r1, i1 := zr[n1*ld:n1*ld+w], zi[n1*ld:n1*ld+w]
		r2, i2 := zr[(k+M)*ld:(k+M)*ld+w], zi[(k+M)*ld:(k+M)*ld+w]
		r3, i3 := zr[n2*ld:n2*ld+w], zi[n2*ld:n2*ld+w]
		or, oi := sr[k*w:(k+1)*w], si[k*w:(k+1)*w]
		if body > 0 {
			realPackAVX512(ptr32(or), ptr32(oi), ptr32(r0), ptr32(i0), ptr32(r1), ptr32(i1), ptr32(r2), ptr32(i2), ptr32(r3), ptr32(i3), body, float32(c), float32(s))
		}
		for j := body; j < w; j++ {
			xr, xi := (r0[j]+r1[j])/2, (i1[j]-i0[j])/2 // X[k] = conj u[k]
			yr, yi := (r2[j]+r3[j])/2, (i3[j]-i2[j])/2 // X[k+M]
			ar, ai := xr+yr, xi+yi
			dr, di := xr-yr, xi-yi
			bR, bI := dr*c-di*s, dr*s+di*c
			or[j], oi[j] = ai+bR, ar-bI // swap(A + i·B)
		}
	}
	h := r.half
	if h.blue != nil {
		h.TransformBatch(sr, si, w, scratch[2*M*w:])
		return si, sr
	}
	// The result may stay in the ping-pong buffer: no copy back.
	sr, si = h.batchAny(sr, si, scratch[2*M*w:], w)
	return si, sr
}
