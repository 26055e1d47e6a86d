package kernels

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestTileRows: on every path, the tile-row helpers give each row, bit for
// bit, what the row helpers give it (ExpSub, SubMul, products for
// ScaleRows, which must leave the gaps between rows alone), and OnlineSoftmax's
// running statistics and factors match float64 arithmetic: for tiles whose
// rows are whole vectors and not, per-row operands at strides 1 and 3, a
// row with no finite score yet, a row whose maximum does not change and a
// row seen for the first time; tiles of more rows than the assembly's
// chunk.
func TestTileRows(t *testing.T) {
	ninf := float32(math.Inf(-1))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 16, 1}, {5, 64, 3}, {4, 33, 1}, {6, 7, 3}, {4, 128, 2}, {70, 32, 2}, {130, 16, 1}} {
		rows, cols, ms := sh[0], sh[1], sh[2]
		name := fmt.Sprintf("%dx%d/ms=%d", rows, cols, ms)
		in, _ := randInputs(int64(rows*cols), 3, rows*cols, -12, 4)
		stats, _ := randInputs(int64(cols), 2, rows*ms, -2, 3)
		m0, l0 := stats[0], stats[1]
		for r := 0; r < rows; r++ {
			l0[r*ms] = float32(math.Abs(float64(l0[r*ms])))
		}
		if rows > 1 { // row 0: first tile of the row (m = −Inf, l = 0)
			m0[0], l0[0] = ninf, 0
		}
		if rows > 2 { // row 1: nothing allowed yet
			m0[ms], l0[ms] = ninf, 0
			for c := 0; c < cols; c++ {
				in[0][cols+c] = ninf
			}
		}
		if rows > 3 { // row 2: the running maximum stays
			m0[2*ms] = 10
		}
		forPaths(t, func(t *testing.T) {
			// ExpSubRows and SubMulRows against the row helpers.
			x, want := slices.Clone(in[0]), slices.Clone(in[0])
			ExpSubRows(x, rows, cols, m0, ms)
			dst, wantD := slices.Clone(in[1]), slices.Clone(in[1])
			SubMulRows(dst, in[2], rows, cols, m0, ms)
			for r := 0; r < rows; r++ {
				row := want[r*cols : (r+1)*cols]
				ExpSub(row, row, m0[r*ms])
				SubMul(wantD[r*cols:(r+1)*cols], in[2][r*cols:(r+1)*cols], m0[r*ms])
			}
			if !bitsEqual(x, want) || !bitsEqual(dst, wantD) {
				t.Fatalf("%s: ExpSubRows or SubMulRows differs from the row helpers", name)
			}
			// ScaleRows on rows ld = cols+5 apart, by factors that include 1.
			ld := cols + 5
			xs := make([]float32, (rows-1)*ld+cols+5)
			copy(xs, in[1])
			sc := slices.Clone(in[2][:rows])
			sc[0] = 1
			want = slices.Clone(xs)
			for r := 0; r < rows; r++ {
				for c := 0; c < cols; c++ {
					want[r*ld+c] *= sc[r]
				}
			}
			ScaleRows(xs, rows, cols, ld, sc)
			if !bitsEqual(xs, want) {
				t.Fatalf("%s: ScaleRows differs from the products", name)
			}
			// OnlineSoftmax.
			x, m, l := slices.Clone(in[0]), slices.Clone(m0), slices.Clone(l0)
			alpha := make([]float32, rows)
			OnlineSoftmax(x, rows, cols, m, l, ms, alpha)
			for r := 0; r < rows; r++ {
				src := in[0][r*cols : (r+1)*cols]
				mOld, lOld := float64(m0[r*ms]), float64(l0[r*ms])
				mNew := max(mOld, float64(Max(src)))
				got := x[r*cols : (r+1)*cols]
				if math.IsInf(mNew, -1) {
					if alpha[r] != 1 || m[r*ms] != m0[r*ms] || l[r*ms] != l0[r*ms] || slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
						t.Fatalf("%s row %d: a row with nothing allowed changed: α %v m %v l %v", name, r, alpha[r], m[r*ms], l[r*ms])
					}
					continue
				}
				row := slices.Clone(src)
				sum := ExpSub(row, row, float32(mNew))
				if !bitsEqual(got, row) || float64(m[r*ms]) != mNew {
					t.Fatalf("%s row %d: exps or maximum differ from ExpSub's", name, r)
				}
				wantA := math.Exp(mOld - mNew)
				if mOld == mNew && alpha[r] != 1 || math.Abs(float64(alpha[r])-wantA) > 4e-7*wantA {
					t.Fatalf("%s row %d: α = %v, want %v", name, r, alpha[r], wantA)
				}
				wantL := lOld*wantA + float64(sum)
				if math.Abs(float64(l[r*ms])-wantL) > 1e-6*wantL {
					t.Fatalf("%s row %d: l = %v, want %v", name, r, l[r*ms], wantL)
				}
			}
			// Entries between strided operands are untouched.
			for i := range m {
				if i%ms != 0 && (m[i] != m0[i] || l[i] != l0[i]) {
					t.Fatalf("%s: entry %d between rows written", name, i)
				}
			}
		})
	}
}

func bitsEqual(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}
