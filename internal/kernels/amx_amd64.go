package kernels

// amxBF16 is the AMX-BF16 micro-kernel (amx_amd64.s): blocks blocks of 32
// rows of C by halves halves of 32 columns of a panel, over steps·32
// values of K; lda is in bytes, ldc in float32, mask selects the columns
// written, tmp holds 32×32 float32 and cfg is amxConfig. mode is
// amxMode's; rows (at most 32) is the rows of each block written in
// mode 0.
//
//go:noescape
func amxBF16(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, blocks int, tmp *float32, cfg *byte, mode, rows, halves int)

// amxConfig is the tile configuration amxBF16 loads: palette 1, and all
// eight tiles 16 rows of 64 bytes.
var amxConfig = func() (cfg [64]byte) {
	cfg[0] = 1
	for i := range 8 {
		cfg[16+2*i] = 64
		cfg[48+i] = 16
	}
	return cfg
}()
