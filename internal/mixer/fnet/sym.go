package fnet

import (
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/kernels/fft"
)

// symLanes is the float32 vector width of the assembly forms of foldRow and
// unfoldRow (AVX-512; the plain-Go loops are their twins and handle the rest).
const symLanes = 16

// useSymAsm reports whether F is float32 and the kernels run on the AVX-512
// path.
func useSymAsm[F kernels.Float]() bool {
	var z F
	return haveSymAsm && unsafe.Sizeof(z) == 4 && kernels.CurrentPath() == kernels.PathAVX512
}

func p32[F kernels.Float](x []F) *float32 { return (*float32)(unsafe.Pointer(&x[0])) }

// foldRow writes e[c] = x[c] + x[D−c] for c < nk (the partner term only when
// D−c > c) and o[c−1] = x[c] − x[D−c] for 1 ≤ c ≤ ns = (D−1)/2, where
// D = len(x), nk = D/2+1. For even D it returns the Nyquist term
// Σ_c (−1)^c·x[c] = Σ_{c<nk} (−1)^c·e[c] (x[c] and x[D−c] share the sign);
// for odd D the return value is meaningless.
func foldRow[F kernels.Float](e, o, x []F) F {
	D := len(x)
	nk, ns := D/2+1, (D-1)/2
	e, o = e[:nk], o[:ns]
	e[0] = x[0]
	alt := x[0]
	c := 1
	if useSymAsm[F]() && ns >= symLanes {
		nc := ns / symLanes
		// Chunk i covers c = 1+16i … 16+16i; its partners x[D−c] are the 16
		// elements ending at D−1−16i, read reversed.
		alt += F(foldAVX512(p32(e[1:]), p32(o), p32(x[1:]), p32(x[D-symLanes:]), nc))
		c = 1 + nc*symLanes
	}
	for ; c <= ns; c++ {
		a, b := x[c], x[D-c]
		e[c], o[c-1] = a+b, a-b
		if c%2 == 0 {
			alt += a + b
		} else {
			alt -= a + b
		}
	}
	if D%2 == 0 {
		e[nk-1] = x[D/2]
		if (D/2)%2 == 0 {
			alt += x[D/2]
		} else {
			alt -= x[D/2]
		}
	}
	return alt
}

// unfoldRow writes (or, with acc, adds) one output row from the
// time-transformed half spectrum: out[c] = y[c] for c < nz = (D+1)/2,
// out[D/2] = yn for even D, and out[c] = ym[D−c] for D/2 < c < D, where y
// is the row's own [nz] real parts, yn its Nyquist one and ym the real
// parts of row (T−t) mod T (Re Z[t, D−c] = Re Z[−t, c]).
func unfoldRow[F kernels.Float](out, y, ym []F, yn F, acc bool) {
	D := len(out)
	nz, nk := (D+1)/2, D/2+1
	nm := D - nk
	y, ym = y[:nz], ym[:nz]
	if D%2 == 0 {
		if acc {
			out[D/2] += yn
		} else {
			out[D/2] = yn
		}
	}
	c0, i0 := 0, 0
	if useSymAsm[F]() {
		if nc := nz / symLanes; nc > 0 {
			copyAVX512(p32(out), p32(y), nc, acc)
			c0 = nc * symLanes
		}
		if nc := nm / symLanes; nc > 0 {
			// Chunk j is out[nk+16j …] = ym[D−nk−16j … down]: the 16
			// elements starting at D−nk−16j−15, reversed.
			revAVX512(p32(out[nk:]), p32(ym[nm-(symLanes-1):]), nc, acc)
			i0 = nc * symLanes
		}
	}
	if acc {
		for c := c0; c < nz; c++ {
			out[c] += y[c]
		}
		for i := i0; i < nm; i++ {
			out[nk+i] += ym[nm-i]
		}
		return
	}
	copy(out[c0:nz], y[c0:])
	for i := i0; i < nm; i++ {
		out[nk+i] = ym[nm-i]
	}
}

// sumDiff sets s[i] = a[i] + b[i] and d[i] = a[i] − b[i] for i < len(a);
// s and d may be a and b (each element is read before it is written).
func sumDiff[F kernels.Float](s, d, a, b []F) {
	n := len(a)
	s, d, b = s[:n], d[:n], b[:n]
	i := 0
	if useSymAsm[F]() && n >= symLanes {
		nc := n / symLanes
		sumDiffAVX512(p32(s), p32(d), p32(a), p32(b), nc)
		i = nc * symLanes
	}
	for ; i < n; i++ {
		u, v := a[i], b[i]
		s[i], d[i] = u+v, u-v
	}
}

// foldBlock writes the time-first columns k0…k0+w−1 of the T rows of
// x [T, D] into the block e, o [T, w] (row stride w): for channel
// c = k0+q, e[t·w+q] = x[t, c] + x[t, D−c] and o[t·w+q] = x[t, c] − x[t, D−c]
// for 1 ≤ c ≤ (D−1)/2, and e = x[t, 0], o = 0 for c = 0. It requires
// k0+w−1 ≤ (D−1)/2.
func foldBlock[F kernels.Float](e, o, x []F, D, T, k0, w int) {
	e, o, x = e[:T*w], o[:T*w], x[:T*D]
	t0 := 0
	if useSymAsm[F]() && w == symLanes && T > 1 {
		if k0 > 0 {
			// Partners of k0…k0+15 are D−k0 down to D−k0−15.
			foldColsAVX512(p32(e), p32(o), p32(x[k0:]), p32(x[D-k0-(symLanes-1):]), T, D)
			return
		}
		// Block 0: lane 0's partner would be x[t, D], which is
		// x[t+1, 0]; the vector form reads it (all rows but the last)
		// and lane 0 is rewritten below.
		foldColsAVX512(p32(e), p32(o), p32(x), p32(x[D-(symLanes-1):]), T-1, D)
		for t := 0; t < T-1; t++ {
			e[t*w], o[t*w] = x[t*D], 0
		}
		t0 = T - 1
	}
	for t := t0; t < T; t++ {
		foldCols(e[t*w:(t+1)*w], o[t*w:(t+1)*w], x[t*D:(t+1)*D], k0)
	}
}

// foldCols writes one row of foldBlock: for channel c = k0+q, q < len(e),
// e[q] = row[c] + row[D−c] and o[q] = row[c] − row[D−c], or row[0] and 0
// for c = 0.
func foldCols[F kernels.Float](e, o, row []F, k0 int) {
	D := len(row)
	o = o[:len(e)]
	for q := range e {
		c := k0 + q
		if c == 0 {
			e[q], o[q] = row[0], 0
			continue
		}
		a, b := row[c], row[D-c]
		e[q], o[q] = a+b, a-b
	}
}

// foldPack writes the packed input of fft.RealPlan.BatchPacked for the
// folded block of foldBlock (columns k0…k0+w−1 of x [T, D], T even) to
// pr, pi [T/2, w], without storing the folded block: row k of the packed
// input needs the folded rows k, −k, k+M and M−k (M = T/2), which are
// folded on the fly from x. c and s are the plan's PackTwiddles; tmp holds
// 8·w elements.
func foldPack[F kernels.Float](pr, pi, x []F, D, T, k0, w int, c, s, tmp []F) {
	M := T / 2
	pr, pi, x = pr[:M*w], pi[:M*w], x[:T*D]
	z := func(i int) []F { return tmp[i*w : (i+1)*w] }
	one := func(k int) {
		rows := [4]int{k, (T - k) % T, k + M, M - k}
		for i, t := range rows {
			foldCols(z(2*i), z(2*i+1), x[t*D:(t+1)*D], k0)
		}
		fft.PackHalf(pr[k*w:(k+1)*w], pi[k*w:(k+1)*w], z(0), z(1), z(2), z(3), z(4), z(5), z(6), z(7), c[k], s[k])
	}
	h := (M - 1) / 2 // pairs (k, M−k), 1 ≤ k ≤ h
	if useSymAsm[F]() && w == symLanes && h > 0 {
		// Rows h, −h, h+M and M−h are the last the walk reads.
		_, _, _, _ = x[h*D+k0+w-1], x[(T-h)*D], x[(h+M)*D+k0+w-1], x[(M-h)*D]
		first := 0
		if k0 == 0 {
			first = 1
		}
		_, _ = c[h], s[h]
		mo := (D - 2*k0 - (symLanes - 1)) * 4 // partners of k0…k0+15, in bytes
		do := int(uintptr(unsafe.Pointer(&pi[0]))) - int(uintptr(unsafe.Pointer(&pr[0])))
		foldPackAVX512(p32(pr[w:]), p32(pr[(M-1)*w:]), p32(x[D+k0:]), p32(x[(T-1)*D+k0:]),
			p32(x[(1+M)*D+k0:]), p32(x[(M-1)*D+k0:]), p32(c[1:]), p32(s[1:]), mo, D, do, h, first)
		one(0)
		if M%2 == 0 {
			one(M / 2)
		}
		return
	}
	for k := 0; k < M; k++ {
		one(k)
	}
}
