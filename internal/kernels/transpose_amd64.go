//go:build !purego

package kernels

// transpose16 is the generated AVX-512 tile transpose (internal/asmgen).
func transpose16(dst *float32, ldd int, src *float32, lds int, add bool) {
	transpose16AVX512(dst, ldd, src, lds, add)
}
