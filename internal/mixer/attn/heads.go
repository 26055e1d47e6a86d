package attn

import (
	"github.com/tokenmix/tokenmix/internal/kernels"
	"github.com/tokenmix/tokenmix/internal/parallel"
)

// Head-major copies. A tile product whose B operand is a block of a head's
// rows (v in o += P·v; k, q and dO in backward's dQ += dS·k, dK += dSᵀ·q and
// dV += Pᵀ·dO) reads them from [B,T,D] with row stride D, so the GEMM packs
// them for every tile (with the score products' packing, a tenth of full
// attention's time at T = 4096–16384 in profiles). Copied once per
// pass into [B,H,T,Dh], a head's rows are Dh apart, which for heads of 16 to
// 64 channels is already the packed layout of one panel: the GEMM reads a
// block of contiguous keys or queries in place. Gathered blocks read their
// own compact copies (gather.go).
//
// Narrow heads. With Dh ≤ 32 columns, dV += Pᵀ·dO and dK += dSᵀ·q run on
// micro-kernels one or two vectors wide, a broadcast per FMA or two, at
// about half the FMA rate. Their transposes, dVᵀ += dOᵀ·P and dKᵀ +=
// qᵀ·dS, have Dh rows and a tile's keys as columns, on the full-width
// kernels. Backward accumulates them for a whole (sequence, head) unit in
// a worker's [Dh, T+16] buffers, and adds their transposes into dk and dv
// when the unit ends: for a layout of contiguous blocks only (full
// attention) the same sums in the same order, bitwise those of the plain
// path; where strided, diagonal or gathered blocks add to dk and dv too,
// the same sums in another order (TestCopiesStrided).

// headMajor reports whether the passes make head-major copies: every pass
// but those whose products run in bf16 (see bf16), whose packed operands
// (headPacks) are already per head, or, on a path that widens bf16, whose
// rounded rows are read in place.
func (a *Attention[F]) headMajor() bool {
	return !a.plain && !a.bf16()
}

// headMajorSize is the scratch of the head-major copies: three [B,T,D]
// (forward uses one for v, backward all three for q, k and dO).
func (a *Attention[F]) headMajorSize(b, t int) int {
	if !a.headMajor() {
		return 0
	}
	return 3 * b * t * a.D
}

// MaxNarrowHead is the widest head whose key and value gradients backward
// accumulates transposed.
const MaxNarrowHead = 32

// transGrads reports whether backward accumulates dK and dV transposed.
func (a *Attention[F]) transGrads() bool { return a.Dh <= MaxNarrowHead && a.headMajor() }

// transGradSize is one worker's transposed dK and dV buffers at length t
// (0 without them).
func (a *Attention[F]) transGradSize(t int) int {
	if !a.transGrads() {
		return 0
	}
	return (2*a.Dh*ldT(t) + 15) &^ 15
}

// ldT is the row stride of the transposed key gradients for T positions:
// T plus 16. With a stride of T, a multiple of 1024, a tile's rows would
// all fall in the same cache sets.
func ldT(T int) int { return T + 16 }

// addTransposed adds the transpose of xt [Dh, T+16] (columns 0…T−1) to
// head h of sequence b of x [B,T,D].
func addTransposed[F kernels.Float](x, xt []F, d dims, b, h int) {
	T, D, Dh := d.T, d.D, d.Dh
	kernels.TransposeAdd(x[b*T*D+h*Dh:], D, xt, ldT(T), Dh, T)
}

// fillHeads sets xh [B,H,T,Dh] to the head-major copy of x [B,T,D].
func fillHeads[F kernels.Float](xh, x []F, d dims) {
	B, T, D, H, Dh := d.B, d.T, d.D, d.H, d.Dh
	parallel.For(d.threads, B*H, 1, func(_, lo, hi int) {
		for u := lo; u < hi; u++ {
			b, h := u/H, u%H
			dst := xh[u*T*Dh : (u+1)*T*Dh]
			src := x[b*T*D+h*Dh:]
			for t := 0; t < T; t++ {
				copy(dst[t*Dh:(t+1)*Dh], src[t*D:t*D+Dh])
			}
		}
	})
}

// qrows returns the block's first query row of x [B,T,D], or of its
// head-major copy xh when there is one, and the row stride.
func qrows[F kernels.Float](x, xh []F, blk *Block, d dims, b, h int) ([]F, int) {
	if xh != nil {
		return xh[((b*d.H+h)*d.T+blk.Q0)*d.Dh:], blk.QS * d.Dh
	}
	return x[(b*d.T+blk.Q0)*d.D+h*d.Dh:], blk.QS * d.D
}
