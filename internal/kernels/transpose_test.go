package kernels

import (
	"fmt"
	"slices"
	"testing"
)

// TestTranspose: on every path, Transpose (and TransposeAdd) moves (adds)
// every element of blocks
// whose sides are below, at and above multiples of 16 (so the AVX-512 tiles
// and both edges run), and writes nothing between dst's rows.
func TestTranspose(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {16, 16}, {15, 17}, {17, 15}, {33, 64}, {64, 16}, {16, 48}, {40, 3}} {
		rows, cols := sh[0], sh[1]
		lds, ldd := cols+3, rows+5
		in, _ := randInputs(int64(rows*cols), 1, rows*lds, -1, 1)
		forPaths(t, func(t *testing.T) {
			dst := make([]float32, cols*ldd)
			for i := range dst {
				dst[i] = -7
			}
			want := slices.Clone(dst)
			for r := 0; r < rows; r++ {
				for c := 0; c < cols; c++ {
					want[c*ldd+r] = in[0][r*lds+c]
				}
			}
			Transpose(dst, ldd, in[0], lds, rows, cols)
			if !slices.Equal(dst, want) {
				t.Fatalf("%s: transpose of %d×%d differs", fmt.Sprint(sh), rows, cols)
			}
			// TransposeAdd on top: every moved element doubles, the
			// gaps stay.
			for r := 0; r < rows; r++ {
				for c := 0; c < cols; c++ {
					want[c*ldd+r] += in[0][r*lds+c]
				}
			}
			TransposeAdd(dst, ldd, in[0], lds, rows, cols)
			if !slices.Equal(dst, want) {
				t.Fatalf("%s: TransposeAdd of %d×%d differs", fmt.Sprint(sh), rows, cols)
			}
		})
	}
}

func BenchmarkTranspose(b *testing.B) {
	benchPaths(b, func(b *testing.B) {
		benchVec(b, 256*64, 2, func(x [][]float32) { Transpose(x[1], 256, x[0], 64, 256, 64) })
	})
}
