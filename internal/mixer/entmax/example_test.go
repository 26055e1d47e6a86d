package entmax_test

import (
	"fmt"
	"math"

	"github.com/tokenmix/tokenmix/internal/mixer/entmax"
)

// ExampleRow: softmax keeps every key, 1.5-entmax and sparsemax (α = 2)
// give exact zeros; −Inf marks a disallowed key. Checked by hand: sparsemax
// has τ = (1.0 + 0.8 − 1)/2 = 0.4; 1.5-entmax on w = z/2 with support
// {0.5, 0.4, 0.05} has τ = mean − √((1 − Σ(w−mean)²)/3) = −0.2275, so
// p = (0.7275², 0.6275², 0.2775²).
func ExampleRow() {
	for _, a := range []float64{1, 1.5, 2} {
		z := []float64{1.0, 0.8, 0.1, -1, math.Inf(-1)}
		_, _, n := entmax.Row(z, make([]float64, len(z)), a, entmax.MethodFor(a, false))
		fmt.Printf("α=%.1f: p = %.3f, support %d\n", a, z, n)
	}
	// Output:
	// α=1.0: p = [0.424 0.347 0.172 0.057 0.000], support 4
	// α=1.5: p = [0.529 0.394 0.077 0.000 0.000], support 3
	// α=2.0: p = [0.600 0.400 0.000 0.000 0.000], support 2
}
