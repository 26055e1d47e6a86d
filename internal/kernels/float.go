package kernels

// Float is the element type of every kernel: float32 on the fast path and
// float64 for gradient checks.
type Float interface {
	~float32 | ~float64
}
