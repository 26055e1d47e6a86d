//go:build !amd64

package fnet

const haveSymAsm = false

func foldAVX512(e, o, a, b *float32, nc int) { panic("fnet: no assembly on this platform") }

func putAVX512(row, mir, v *float32, mask uint64, acc bool) {
	panic("fnet: no assembly on this platform")
}
