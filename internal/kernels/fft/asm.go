package fft

import (
	"unsafe"

	"github.com/tokenmix/tokenmix/internal/kernels"
)

// vecLanes is the float32 vector width of the assembly butterflies: they run
// when a pass's stride s is a multiple of it.
const vecLanes = 16

// useAsm reports whether F is float32 and the kernels run on the AVX-512
// path (kernels.SetPath switches the butterflies with the other kernels).
func useAsm[F kernels.Float]() bool {
	var z F
	return haveAsm && unsafe.Sizeof(z) == 4 && kernels.CurrentPath() == kernels.PathAVX512
}

// ptr32 returns the address of x[0] as a *float32; F must be float32.
func ptr32[F kernels.Float](x []F) *float32 { return (*float32)(unsafe.Pointer(&x[0])) }

// radix4Asm is radix4 for float32 with s a multiple of vecLanes: the q loop
// in AVX-512. It checks every extent the assembly touches.
func radix4Asm[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	m := st.m
	N := 4 * s * m
	_, _, _, _ = yr[N-1], yi[N-1], xr[N-1], xi[N-1]
	_ = st.twp[6*m-1]
	radix4AVX512(ptr32(yr), ptr32(yi), ptr32(xr), ptr32(xi), ptr32(st.twp), s, m)
}

// radix2Asm is radix2 for float32 with s a multiple of vecLanes.
func radix2Asm[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	m := st.m
	N := 2 * s * m
	_, _, _, _ = yr[N-1], yi[N-1], xr[N-1], xi[N-1]
	_ = st.twp[2*m-1]
	radix2AVX512(ptr32(yr), ptr32(yi), ptr32(xr), ptr32(xi), ptr32(st.twp), s, m)
}

// radixOddAsm is radixN for float32 with p = 5 or 7 and s a multiple of
// vecLanes.
func radixOddAsm[F kernels.Float](st *stage[F], s int, yr, yi, xr, xi []F) {
	p, m := st.p, st.m
	N := p * s * m
	_, _, _, _ = yr[N-1], yi[N-1], xr[N-1], xi[N-1]
	_ = st.twp[2*(p-1)*m-1]
	h := (p - 1) / 2
	_ = st.cst[2*h*h-1]
	f := radix5AVX512
	if p == 7 {
		f = radix7AVX512
	}
	f(ptr32(yr), ptr32(yi), ptr32(xr), ptr32(xi), ptr32(st.twp), ptr32(st.cst), s, m)
}
