package fft

import "testing"

func BenchmarkProbeFour(b *testing.B) {
	setFourStepMin(b, 0)
	const n, w = 16384, 16
	p := PlanFor[float32](n)
	re, im := make([]float32, n*w), make([]float32, n*w)
	s := make([]float32, 2*p.BatchScratchLen(w))
	for i := 0; i < b.N; i++ {
		p.TransformBatch(re, im, w, s)
	}
}
