package onnx

// SetExternal lowers the inline limit and the smallest external tensor for
// a test (external data without a 2 GiB model) and returns the function
// that restores them.
func SetExternal(inline, min int) (restore func()) {
	oi, om := inlineMax, externalMin
	inlineMax, externalMin = inline, min
	return func() { inlineMax, externalMin = oi, om }
}
