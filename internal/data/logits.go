package data

import (
	"math"
	"slices"
)

// The one softmax, log-softmax and argmax over a row of logits. Sums and
// logarithms are taken in float64 about the row's maximum, so no
// probability underflows to log(0).

// LogNorm returns the maximum mx of x and log Σ exp(x − mx): log softmax(x)[k]
// is float64(x[k]−mx) − logZ. LogNorm panics if x is empty.
func LogNorm(x []float32) (mx float32, logZ float64) {
	mx, sum := expSum(x)
	return mx, math.Log(sum)
}

// expSum returns the maximum mx of x and Σ exp(x − mx). It panics if x is
// empty.
func expSum(x []float32) (mx float32, sum float64) {
	mx = slices.Max(x)
	for _, v := range x {
		sum += math.Exp(float64(v - mx))
	}
	return mx, sum
}

// LogSoftmaxAt returns log softmax(x)[k]. It panics if k is out of range.
func LogSoftmaxAt(x []float32, k int) float64 {
	mx, logZ := LogNorm(x)
	return float64(x[k]-mx) - logZ
}

// Softmax returns softmax(x) in fresh memory. It panics if x is empty.
func Softmax(x []float32) []float32 {
	mx, sum := expSum(x)
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(math.Exp(float64(v-mx)) / sum)
	}
	return out
}

// Argmax returns the index of the largest element of x, the first of equal
// ones (0 for an empty x).
func Argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
