//go:build !amd64

package kernels

// vecByPath holds the float32 row primitives of each path; only PathGo
// exists off amd64.
var vecByPath = [...]*vec32{PathGo: goVec}
