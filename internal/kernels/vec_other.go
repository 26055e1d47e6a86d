//go:build !amd64 || purego

package kernels

// vecByPath holds the float32 row primitives of each path; only PathGo
// exists off amd64.
var vecByPath = [...]*vec32{PathGo: goVec}

func dot32(x, y []float32) float32 { return dotGo(x, y) }

func axpy32(dst []float32, a float32, x []float32) { axpyGo(dst, a, x) }
