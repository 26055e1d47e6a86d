//go:build !amd64

package fnet

const haveSymAsm = false

func foldAVX512(e, o, a, b *float32, nc int) float32 {
	panic("fnet: no assembly on this platform")
}

func copyAVX512(dst, src *float32, nc int, acc bool) { panic("fnet: no assembly on this platform") }

func revAVX512(dst, src *float32, nc int, acc bool) { panic("fnet: no assembly on this platform") }

func sumDiffAVX512(s, d, a, b *float32, nc int) { panic("fnet: no assembly on this platform") }

func foldColsAVX512(e, o, a, b *float32, rows, stride int) {
	panic("fnet: no assembly on this platform")
}

// prefetchLines is a hint; without the assembly it does nothing.
func prefetchLines(p *float32, n int) {}

func foldPackAVX512(or, or2, x0, x1, x2, x3, c, s *float32, mo, stride, do, cnt, first int) {
	panic("fnet: no assembly on this platform")
}
