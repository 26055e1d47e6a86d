package kernels

// Float is the element type of every kernel: float32 on the fast path and
// float64 for gradient checks.
type Float interface {
	~float32 | ~float64
}

// F32 is x as []float32, for the float32-only paths (bf16) of code generic
// in F; it panics if F is not float32.
func F32[F Float](x []F) []float32 { return any(x).([]float32) }
