package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinear checks LinearForward (setting and accumulating) and
// LinearBackward (accumulating and setting dx) against direct sums in
// float64, including accumulation into non-zero gradients.
func TestLinear(t *testing.T) {
	for _, tc := range []struct{ N, out, in int }{{1, 1, 1}, {7, 13, 5}, {130, 33, 65}} {
		rng := rand.New(rand.NewPCG(3, uint64(tc.N)))
		r := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			return v
		}
		x, w, b, dy := r(tc.N*tc.in), r(tc.out*tc.in), r(tc.out), r(tc.N*tc.out)
		y := r(tc.N * tc.out) // garbage: Linear must overwrite
		LinearForward(2, PrecFP32, y, x, w, nil, b, tc.N, tc.in, tc.out, false)
		y2 := r(tc.N * tc.out)
		y20 := append([]float64(nil), y2...)
		LinearForward(2, PrecFP32, y2, x, w, nil, b, tc.N, tc.in, tc.out, true)
		for i := range y2 {
			if want := y20[i] + y[i]; math.Abs(y2[i]-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("%+v: accumulated y[%d] = %v, want %v", tc, i, y2[i], want)
			}
		}
		dw, db := r(tc.out*tc.in), r(tc.out)
		dw0, db0 := append([]float64(nil), dw...), append([]float64(nil), db...)
		dx, dxSet := r(tc.N*tc.in), r(tc.N*tc.in)
		dx0 := append([]float64(nil), dx...)
		LinearBackward(2, PrecFP32, dx, dw, db, dy, x, w, tc.N, tc.in, tc.out, false)
		dw1, db1 := append([]float64(nil), dw...), append([]float64(nil), db...)
		LinearBackward(1, PrecFP32, dxSet, dw1, db1, dy, x, w, tc.N, tc.in, tc.out, true)
		for n := 0; n < tc.N; n++ {
			for i := 0; i < tc.in; i++ {
				want := 0.0
				for o := 0; o < tc.out; o++ {
					want += dy[n*tc.out+o] * w[o*tc.in+i]
				}
				if g := dxSet[n*tc.in+i]; math.Abs(g-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("%+v: set dx[%d,%d] = %v, want %v", tc, n, i, g, want)
				}
				if g, w := dx[n*tc.in+i], dx0[n*tc.in+i]+want; math.Abs(g-w) > 1e-12*(1+math.Abs(w)) {
					t.Fatalf("%+v: accumulated dx[%d,%d] = %v, want %v", tc, n, i, g, w)
				}
			}
		}
		for n := 0; n < tc.N; n++ {
			for o := 0; o < tc.out; o++ {
				want := b[o]
				for i := 0; i < tc.in; i++ {
					want += x[n*tc.in+i] * w[o*tc.in+i]
				}
				if math.Abs(y[n*tc.out+o]-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("%+v: y[%d,%d] = %v, want %v", tc, n, o, y[n*tc.out+o], want)
				}
			}
		}
		for o := 0; o < tc.out; o++ {
			wantB := db0[o]
			for n := 0; n < tc.N; n++ {
				wantB += dy[n*tc.out+o]
			}
			if math.Abs(db[o]-wantB) > 1e-12*(1+math.Abs(wantB)) {
				t.Fatalf("%+v: db[%d] = %v, want %v", tc, o, db[o], wantB)
			}
			for i := 0; i < tc.in; i++ {
				want := dw0[o*tc.in+i]
				for n := 0; n < tc.N; n++ {
					want += dy[n*tc.out+o] * x[n*tc.in+i]
				}
				if math.Abs(dw[o*tc.in+i]-want) > 1e-12*(1+math.Abs(want)) {
					t.Fatalf("%+v: dw[%d,%d] = %v, want %v", tc, o, i, dw[o*tc.in+i], want)
				}
			}
		}
	}
}

// TestLinearBackwardFill: on every bf16 path, LinearBackwardFill and
// LinearBackward in bf16 (both packing dy by blocks) give the dx and dW
// of GemmBF16 packing dy whole, bit for bit (dy made by blocks, odd and
// tile-sized shapes, gradients accumulated onto non-zero values, dx set
// or added), db within float32 rounding of the float64 sum, and the same
// bits on 1 and 3 threads.
func TestLinearBackwardFill(t *testing.T) {
	for _, bp := range BF16Paths() {
		old, _ := SetBF16Path(bp)
		for _, tc := range []struct{ N, out, in int }{{1, 1, 1}, {31, 3, 5}, {33, 64, 16}, {97, 48, 37}, {128, 130, 64}} {
			rng := rand.New(rand.NewPCG(5, uint64(tc.N*tc.out)))
			r := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			x, w, dy := r(tc.N*tc.in), r(tc.out*tc.in), r(tc.N*tc.out)
			dw0, db0, dx0 := r(tc.out*tc.in), r(tc.out), r(tc.N*tc.in)
			for _, setDx := range []bool{false, true} {
				wantDx, wantDw := append([]float32(nil), dx0...), append([]float32(nil), dw0...)
				beta := float32(1)
				if setDx {
					beta = 0
				}
				GemmBF16(2, 1, Float32A(false, tc.N, tc.out, dy, tc.out), Float32B(false, tc.out, tc.in, w, tc.in), beta, wantDx, tc.in)
				GemmBF16(2, 1, Float32A(true, tc.out, tc.N, dy, tc.out), Float32B(false, tc.N, tc.in, x, tc.in), 1, wantDw, tc.in)
				var first [3][]float32
				for i, threads := range []int{1, 3, 2} {
					dx, dw, db := append([]float32(nil), dx0...), append([]float32(nil), dw0...), append([]float32(nil), db0...)
					if i == 2 { // LinearBackward, from dy whole
						LinearBackward(threads, PrecBF16, dx, dw, db, dy, x, w, tc.N, tc.in, tc.out, setDx)
						for j, pair := range [][2][]float32{{dx, wantDx}, {dw, wantDw}, {db, first[2]}} {
							for k := range pair[1] {
								if pair[0][k] != pair[1][k] {
									t.Fatalf("%s %+v setDx=%v: LinearBackward result %d [%d] = %v, want %v", bp, tc, setDx, j, k, pair[0][k], pair[1][k])
								}
							}
						}
						continue
					}
					scratch := r(tc.N * tc.out) // garbage: overwritten
					fill := func(r0, r1 int, blk, tmp []float32) {
						if len(blk) != (r1-r0)*tc.out || len(tmp) != len(blk) {
							t.Errorf("fill(%d, %d) got %d and %d values", r0, r1, len(blk), len(tmp))
						}
						for i := range tmp {
							tmp[i] = float32(math.NaN()) // fill's own: must not reach dy
						}
						copy(blk, dy[r0*tc.out:r1*tc.out])
					}
					LinearBackwardFill(threads, dx, dw, db, fill, x, w, tc.N, tc.in, tc.out, setDx, scratch)
					for i := range dx {
						if dx[i] != wantDx[i] {
							t.Fatalf("%s %+v setDx=%v threads %d: dx[%d] = %v, GemmBF16's %v", bp, tc, setDx, threads, i, dx[i], wantDx[i])
						}
					}
					for i := range dw {
						if dw[i] != wantDw[i] {
							t.Fatalf("%s %+v threads %d: dw[%d] = %v, GemmBF16's %v", bp, tc, threads, i, dw[i], wantDw[i])
						}
					}
					for j := range db {
						want := float64(db0[j])
						for n := range tc.N {
							want += float64(dy[n*tc.out+j])
						}
						if math.Abs(float64(db[j])-want) > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("%s %+v threads %d: db[%d] = %v, want %v", bp, tc, threads, j, db[j], want)
						}
					}
					if first[0] == nil {
						first = [3][]float32{dx, dw, db}
						continue
					}
					for i := range db {
						if db[i] != first[2][i] {
							t.Fatalf("%s %+v: db[%d] differs between 1 and 3 threads", bp, tc, i)
						}
					}
				}
			}
		}
		SetBF16Path(old)
	}
}
