package optim

import "math"

// Schedule is a linear warmup to LR over Warmup updates, then a cosine decay
// to MinLR at update Steps (see the package doc for the formula), or, with
// Constant, LR from the end of the warmup on.
type Schedule struct {
	LR, MinLR     float64
	Warmup, Steps int
	Constant      bool
}

// At returns the learning rate of the update with 0-based index step. Past
// Steps it stays at MinLR (LR when Constant).
func (s Schedule) At(step int) float64 {
	if step < s.Warmup {
		return s.LR * float64(step+1) / float64(s.Warmup)
	}
	if s.Constant {
		return s.LR
	}
	if step >= s.Steps || s.Steps <= s.Warmup {
		return s.MinLR
	}
	p := float64(step-s.Warmup) / float64(s.Steps-s.Warmup)
	return s.MinLR + 0.5*(s.LR-s.MinLR)*(1+math.Cos(math.Pi*p))
}
