//go:build !amd64

package kernels

// bf16Best is "go": other platforms have no bf16 assembly.
var bf16Best = "go"

func hasBF16Conv() bool { return false }

func toBF16AVX512(dst *BF16, src *float32, n int)   { panic("unreachable") }
func fromBF16AVX512(dst *float32, src *BF16, n int) { panic("unreachable") }
func keepBF16AVX512(dst *BF16, x *float32, n int)   { panic("unreachable") }

// bf16K512 is empty: the Go twin runs.
var bf16K512 [gemmMR]func(k int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, tiles, astride int)

func bf16PeakLoop(n int) { panic("unreachable") }

const bf16PeakFlops = 0

func roundHalfAVX512(x *float32, n int) { panic("unreachable") }

func pairPanelAVX512(dst *BF16, src *float32, ldb, pairs, n16 int) { panic("unreachable") }

func toBF16RowsAVX512(dst *BF16, dld int, src *float32, sld, rows, n16 int) { panic("unreachable") }

func toHalfAVX512(dst *uint16, src *float32, n int)   { panic("unreachable") }
func fromHalfAVX512(dst *float32, src *uint16, n int) { panic("unreachable") }

func pairT16AVX512(dst *BF16, st int, src *float32, lda int) { panic("unreachable") }

func pairRowsAVX512(dst, r0, r1 *BF16, n int) { panic("unreachable") }

func pairTB16AVX512(dst *BF16, src *float32, ldb int) { panic("unreachable") }

var bf16Paths = []string{"go"}

func amxBF16(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, blocks int, tmp *float32, cfg *byte, mode, rows, halves int) {
	panic("unreachable")
}

var amxConfig [64]byte
