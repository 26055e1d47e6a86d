package fft

import (
	"sync"
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
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
	if fs := r.half.splitFor(w); fs != nil {
		return 2 * fs.scratchLen(w)
	}
	return 2*M*w + r.PackedScratchLen(w)
}

// Batch computes y_q = Re(DFT_n(z_q)) for w complex sequences read as rows:
// element t of sequence q is (zr[t·ld+q], zi[t·ld+q]). It writes the even
// outputs y_q[2m] to even[m·lde+q] and the odd ones y_q[2m+1] to
// odd[m·lde+q], m < n/2. zr and zi are not modified, except where even or
// odd share their storage: Batch reads all of z before it writes any
// output, so the result may overwrite the input (FNet writes it back into
// the columns it read). Batch panics if w < 1, ld < w, lde < w, a row lies
// outside zr, zi, even or odd, or scratch is shorter than ScratchLen(w).
//
// y = Re(F z) = F u with u[t] = (z[t] + conj z[−t])/2 Hermitian, so y is
// real and y[j] = Σ_k X[k]·e^{+2πi·kj/n} with X = conj u. Splitting j into
// even and odd, y[2m] + i·y[2m+1] = Σ_{k<M} Z[k]·e^{+2πi·km/M} with
// Z = A + i·B, A[k] = X[k] + X[k+M] and B[k] = (X[k] − X[k+M])·e^{+2πi·k/n}:
// an inverse DFT of length M, computed as a forward one on swapped real and
// imaginary parts (IDFT(Z) = swap(DFT(swap Z))).
//
// For long batches (M·w ≥ fourStepMinNW) the packing of swap(Z) is fused
// into the four-step path's slab gather and its output rows go straight to
// even and odd, so no [M, w] copy of the spectrum is made.
func (r *RealPlan[F]) Batch(even, odd []F, lde int, zr, zi []F, ld, w int, scratch []F) {
	if w < 1 || ld < w || lde < w {
		panic("fft: RealPlan.Batch needs 1 ≤ w ≤ ld and w ≤ lde")
	}
	n, M := r.n, r.n/2
	zr, zi = zr[:(n-1)*ld+w], zi[:(n-1)*ld+w]
	even, odd = even[:(M-1)*lde+w], odd[:(M-1)*lde+w]
	scratch = scratch[:r.ScratchLen(w)]
	body := 0
	if useAsm[F]() {
		body = w &^ (vecLanes - 1)
	}
	h := r.half
	if fs := h.splitFor(w); fs != nil {
		sl := fs.scratchLen(w)
		n1 := fs.n1
		fs.run(scratch[:sl], scratch[sl:2*sl], w,
			func(dr, di []F, j0 int) { r.packRows(dr, di, zr, zi, ld, j0, w, body) },
			func(k1, cnt int, xr, xi []F, rs int) {
				// Output k = k1 + n1·k2 is swap(y[2k] + i·y[2k+1]).
				scatterGroup(even[k1*lde:], odd[k1*lde:], xi, xr, w, cnt, fs.n2, n1, lde, rs)
			})
		return
	}
	// sr, si hold swap(Z): sr = Im Z, si = Re Z.
	N := M * w
	sr, si := scratch[:N], scratch[N:2*N]
	r.packPairs(sr, si, zr, zi, ld, w, body)
	r.transformPacked(even, odd, lde, sr, si, w, scratch[2*N:])
}

// PackTwiddles returns the packing's twiddles c, s [n/2]: c[k] + i·s[k] =
// e^{+2πi·k/n} (see BatchPacked). The slices are shared; do not modify.
func (r *RealPlan[F]) PackTwiddles() (c, s []F) { return r.c, r.s }

// PackedScratchLen is the scratch BatchPacked needs for w sequences.
func (r *RealPlan[F]) PackedScratchLen(w int) int { return 2 * r.half.BatchScratchLen(w) }

// BatchPacked is Batch for a caller that packs the input itself, for
// example while computing z: row k < n/2 of (sr, si) [n/2, w] (row stride
// w) must hold swap(Z[k]) = (Im Z[k], Re Z[k]) of the w sequences, with
// X[k] = (conj z[k] + z[−k])/2 and Z[k] = A + i·B, A = X[k] + X[k+M],
// B = (X[k] − X[k+M])·(c[k] + i·s[k]) (M = n/2, c and s from
// PackTwiddles; PackHalf computes it). It overwrites sr and si and writes
// even and odd as Batch does. scratch holds PackedScratchLen(w) elements.
func (r *RealPlan[F]) BatchPacked(even, odd []F, lde int, sr, si []F, w int, scratch []F) {
	if w < 1 || lde < w {
		panic("fft: RealPlan.BatchPacked needs 1 ≤ w ≤ lde")
	}
	M := r.n / 2
	even, odd = even[:(M-1)*lde+w], odd[:(M-1)*lde+w]
	r.transformPacked(even, odd, lde, sr[:M*w], si[:M*w], w, scratch[:r.PackedScratchLen(w)])
}

// transformPacked transforms the packed swap(Z) in (sr, si) (overwritten)
// and writes its rows to even and odd; scratch holds
// 2·half.BatchScratchLen(w) elements.
func (r *RealPlan[F]) transformPacked(even, odd []F, lde int, sr, si []F, w int, scratch []F) {
	h, M := r.half, r.n/2
	if h.quarters(w) {
		xr, xi, qs := h.quarterBatch(sr, si, scratch, w)
		interleave4(even, odd, xi, xr, w, M/4, lde, qs)
		return
	}
	var xr, xi []F
	if h.blue != nil {
		h.TransformBatch(sr, si, w, scratch)
		xr, xi = sr, si
	} else {
		xr, xi = h.batchAny(sr, si, scratch, w)
	}
	scatterRows(even, odd, xi, xr, w, lde)
}

// packPairs writes swap(Z[k]) for all k < M to rows of w elements of
// (or, oi). Outputs k and M−k read the same four rows of z
// (−(M−k) = M+k, (M−k)+M = −k and M−(M−k) = k), so they are computed
// together and each row of z is read once: X[M−k] = conj X[k+M] and
// X[M−k+M] = conj X[k], hence A' = conj A, D' = −conj D and, with
// e^{2πi(M−k)/n} = −conj e^{2πik/n}, B' = conj B, which gives
// swap Z' = (B_re − A_im, A_re + B_im) from swap Z = (A_im + B_re, A_re − B_im).
func (r *RealPlan[F]) packPairs(or, oi, zr, zi []F, ld, w, body int) {
	M := r.n / 2
	h := (M - 1) / 2 // pairs (k, M−k) for 1 ≤ k ≤ h
	r.pack(or[:w], oi[:w], zr, zi, ld, 0, body)
	if M%2 == 0 && M > 0 {
		r.pack(or[M/2*w:(M/2+1)*w], oi[M/2*w:(M/2+1)*w], zr, zi, ld, M/2, body)
	}
	if h < 1 {
		return
	}
	if w == vecLanes && body == w {
		n := r.n
		_, _, _, _ = zr[(h+M)*ld+w-1], zi[(h+M)*ld+w-1], zr[(n-1)*ld+w-1], zi[(n-1)*ld+w-1]
		_, _, _, _ = zr[(M-h)*ld], zr[(n-h)*ld], or[M*w-1], oi[M*w-1]
		_, _ = r.c[h], r.s[h]
		dz := int(uintptr(unsafe.Pointer(&zi[0]))) - int(uintptr(unsafe.Pointer(&zr[0])))
		do := int(uintptr(unsafe.Pointer(&oi[0]))) - int(uintptr(unsafe.Pointer(&or[0])))
		realPackPairAVX512(ptr32(or[w:]), ptr32(or[(M-1)*w:]), ptr32(zr[ld:]), ptr32(zr[(n-1)*ld:]), ptr32(zr[(1+M)*ld:]), ptr32(zr[(M-1)*ld:]), ptr32(r.c[1:]), ptr32(r.s[1:]), dz, do, ld, h)
		return
	}
	for k := 1; k <= h; k++ {
		r.pack(or[k*w:(k+1)*w], oi[k*w:(k+1)*w], zr, zi, ld, k, body)
		r.pack(or[(M-k)*w:(M-k+1)*w], oi[(M-k)*w:(M-k+1)*w], zr, zi, ld, M-k, body)
	}
}

// packRows writes swap(Z[k]) for the len(or)/w consecutive k = k0, k0+1, …
// to rows of w elements of (or, oi); for w = 16 on the AVX-512 path one
// assembly call packs all rows from k = 1 on.
func (r *RealPlan[F]) packRows(or, oi, zr, zi []F, ld, k0, w, body int) {
	cnt := len(or) / w
	if k0 == 0 && cnt > 0 {
		// Row −0 = 0 does not continue the backward row walk.
		r.pack(or[:w], oi[:w], zr, zi, ld, 0, body)
		k0, cnt, or, oi = 1, cnt-1, or[w:], oi[w:]
	}
	if w == vecLanes && body == w && cnt > 0 {
		n, M := r.n, r.n/2
		kl := k0 + cnt - 1 // every row the walk touches lies in z
		_, _, _, _ = zr[(kl+M)*ld+w-1], zi[(kl+M)*ld+w-1], zr[(n-k0)*ld+w-1], zi[(n-k0)*ld+w-1]
		_, _, _, _ = zr[(M-kl)*ld], zr[(n-kl)*ld], or[cnt*w-1], oi[cnt*w-1]
		_, _ = r.c[kl], r.s[kl]
		dz := int(uintptr(unsafe.Pointer(&zi[0]))) - int(uintptr(unsafe.Pointer(&zr[0])))
		realPackRowsAVX512(ptr32(or), ptr32(oi), ptr32(zr[k0*ld:]), ptr32(zr[(n-k0)*ld:]), ptr32(zr[(k0+M)*ld:]), ptr32(zr[(M-k0)*ld:]), ptr32(r.c[k0:]), ptr32(r.s[k0:]), dz, ld, cnt)
		return
	}
	if w == 1 {
		// One column (FNet's Nyquist column): the pack loop of Batch
		// inline, without per-k slicing.
		n, M := r.n, r.n/2
		for j := 0; j < cnt; j++ {
			k := k0 + j
			a, b, c, d := k*ld, (n-k)*ld, (k+M)*ld, (M-k)*ld
			xr, xi := (zr[a]+zr[b])/2, (zi[b]-zi[a])/2
			yr, yi := (zr[c]+zr[d])/2, (zi[d]-zi[c])/2
			ar, ai := xr+yr, xi+yi
			dr, di := xr-yr, xi-yi
			cs, sn := r.c[k], r.s[k]
			or[j], oi[j] = ai+dr*cs-di*sn, ar-(dr*sn+di*cs)
		}
		return
	}
	for j := 0; j < cnt; j++ {
		r.pack(or[j*w:(j+1)*w], oi[j*w:(j+1)*w], zr, zi, ld, k0+j, body)
	}
}

// pack writes swap(Z[k]) = (Im Z[k], Re Z[k]) of the w sequences (see
// Batch) to (or, oi); the first body elements (a multiple of 16, or 0)
// run in AVX-512.
func (r *RealPlan[F]) pack(or, oi, zr, zi []F, ld, k, body int) {
	n, M, w := r.n, r.n/2, len(or)
	n1, n2 := (n-k)%n, M-k // −k and −(k+M) mod n
	c, s := r.c[k], r.s[k]
	r0, i0 := zr[k*ld:k*ld+w], zi[k*ld:k*ld+w]
	r1, i1 := zr[n1*ld:n1*ld+w], zi[n1*ld:n1*ld+w]
	r2, i2 := zr[(k+M)*ld:(k+M)*ld+w], zi[(k+M)*ld:(k+M)*ld+w]
	r3, i3 := zr[n2*ld:n2*ld+w], zi[n2*ld:n2*ld+w]
	oi = oi[:w]
	if body > 0 {
		realPackAVX512(ptr32(or), ptr32(oi), ptr32(r0), ptr32(i0), ptr32(r1), ptr32(i1), ptr32(r2), ptr32(i2), ptr32(r3), ptr32(i3), body, float32(c), float32(s))
	}
	PackHalf(or[body:], oi[body:], r0[body:], i0[body:], r1[body:], i1[body:], r2[body:], i2[body:], r3[body:], i3[body:], c, s)
}

// PackHalf writes swap(Z[k]) (see BatchPacked) to (or, oi) for len(or)
// sequences from rows k (r0, i0), −k (r1, i1), k+M (r2, i2) and M−k
// (r3, i3) of z, with c + i·s = e^{+2πi·k/n}.
func PackHalf[F kernels.Float](or, oi, r0, i0, r1, i1, r2, i2, r3, i3 []F, c, s F) {
	w := len(or)
	oi, r0, i0, r1, i1 = oi[:w], r0[:w], i0[:w], r1[:w], i1[:w]
	r2, i2, r3, i3 = r2[:w], i2[:w], r3[:w], i3[:w]
	for j := 0; j < w; j++ {
		xr, xi := (r0[j]+r1[j])/2, (i1[j]-i0[j])/2 // X[k] = conj u[k]
		yr, yi := (r2[j]+r3[j])/2, (i3[j]-i2[j])/2 // X[k+M]
		ar, ai := xr+yr, xi+yi
		dr, di := xr-yr, xi-yi
		bR, bI := dr*c-di*s, dr*s+di*c
		or[j], oi[j] = ai+bR, ar-bI // swap(A + i·B)
	}
}
