//go:build !purego

package kernels

//go:noescape
func transpose16AVX512(dst *float32, ldd int, src *float32, lds int, add bool)

func transpose16(dst *float32, ldd int, src *float32, lds int, add bool) {
	transpose16AVX512(dst, ldd, src, lds, add)
}
