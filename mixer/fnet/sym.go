package fnet

import (
	"unsafe"

	"tokenmix/kernels"
)

// symLanes is the float32 vector width of the assembly forms of foldRow and
// put (AVX-512; the plain-Go loops are their twins and handle the rest).
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
// D = len(x), nk = D/2+1.
func foldRow[F kernels.Float](e, o, x []F) {
	D := len(x)
	nk, ns := D/2+1, (D-1)/2
	e, o = e[:nk], o[:ns]
	e[0] = x[0]
	c := 1
	if useSymAsm[F]() && ns >= symLanes {
		nc := ns / symLanes
		// Chunk i covers c = 1+16i … 16+16i; its partners x[D−c] are the 16
		// elements ending at D−1−16i, read reversed.
		foldAVX512(p32(e[1:]), p32(o), p32(x[1:]), p32(x[D-symLanes:]), nc)
		c = 1 + nc*symLanes
	}
	for ; c <= ns; c++ {
		a, b := x[c], x[D-c]
		e[c], o[c-1] = a+b, a-b
	}
	if D%2 == 0 {
		e[nk-1] = x[D/2]
	}
}

// put stores (or, with acc, adds) v as out[t, k] for the kept columns
// k0…k0+len(v)−1 of row t, and as out[(T−t) mod T, D−k] for their mirror
// columns (k ≥ 1, D−k ≥ nk): Re Z[t, D−k] = Re Z[−t, k].
func put[F kernels.Float](o, v []F, D, T, t, k0 int, acc bool) {
	nk := D/2 + 1
	w := len(v)
	j0 := max(1-k0, 0)      // skip column 0 (its own mirror)
	j1 := min(w, D-nk-k0+1) // mirror D−k ≥ nk ⇔ k ≤ D−nk
	tm := (T - t) % T
	row := o[t*D+k0 : t*D+k0+w]
	if w == symLanes && useSymAsm[F]() {
		// Mirror lane i of the reversed vector is j = 15−i, at column
		// D−k0−15+i of row tm; lanes outside [j0, j1) are masked off, so
		// the store never touches them (even past the end of o).
		var mask uint64
		for j := j0; j < j1; j++ {
			mask |= 1 << (symLanes - 1 - j)
		}
		mir := unsafe.Pointer(&o[tm*D])
		mir = unsafe.Add(mir, (D-k0-(symLanes-1))*4)
		putAVX512(p32(row), (*float32)(mir), p32(v), mask, acc)
		return
	}
	if acc {
		for j, x := range v {
			row[j] += x
		}
	} else {
		copy(row, v)
	}
	if j0 >= j1 {
		return
	}
	mir := o[tm*D : (tm+1)*D]
	if acc {
		for j := j0; j < j1; j++ {
			mir[D-k0-j] += v[j]
		}
		return
	}
	for j := j0; j < j1; j++ {
		mir[D-k0-j] = v[j]
	}
}
