package main

import (
	"bytes"
	"fmt"
)

// The float32 → bf16 conversion and packing kernels. Each has two bodies
// and takes one on entry by the package's bf16Cvt:
//
//   - integer arithmetic on AVX-512F (roundReg): bf = (x + 0x7FFF +
//     (x>>16 & 1)) >> 16, round to nearest even, and a NaN keeps its top
//     bits with the quiet bit set;
//   - VCVTNEPS2BF16 and VCVTNE2PS2BF16 (AVX512-BF16), which round the same
//     way but flush subnormal inputs to zero. A vector holding a subnormal
//     (VFPCLASSPS) takes a side path, written after the body's RET, that
//     rounds it in integer arithmetic; so both bodies give the same bits
//     for every input, and the side path costs nothing where no subnormal
//     occurs.
//
// On an Intel Xeon (family 6, model 207) the second body runs 1.5–1.7×
// the first on blocks in L1 or L2 (4K and 64K values), and alike on
// blocks from memory (1M), where the stores set the pace.

// conv emits one body of a conversion kernel.
type conv struct {
	s    *bytes.Buffer // the function's text
	side bytes.Buffer  // the side paths, written after the body
	ne   bool          // the AVX512-BF16 body
	fn   string        // the body's label prefix
	n    int           // side paths so far
	out  *bytes.Buffer // where p writes: s, or side
}

func (c *conv) p(format string, args ...any) { fmt.Fprintf(c.out, "\t"+format+"\n", args...) }

// l is the body's label l.
func (c *conv) l(l string) string { return c.fn + "_" + l }

// label places label l.
func (c *conv) label(l string) { fmt.Fprintf(c.out, "%s:\n", c.l(l)) }

// convFunc emits the function name with Go signature sig (frame the TEXT
// directive's argument size, doc its declaration's comment): args loads
// the arguments into registers and may jump to the label "done" (returns
// with nothing done); then each body in turn, with its own labels.
// pairIdx loads the pair interleaving index into Z9 for the AVX512-BF16
// body (pair).
func convFunc(s, g *bytes.Buffer, name, sig, frame, doc string, pairIdx bool, args func(p func(string, ...any)), body func(c *conv)) {
	p := func(format string, args ...any) { fmt.Fprintf(s, "\t"+format+"\n", args...) }
	fmt.Fprintf(g, "%s//\n//go:noescape\nfunc %s%s\n\n", doc, name, sig)
	fmt.Fprintf(s, "\n// func %s%s\nTEXT ·%s(SB), NOSPLIT, %s\n", name, sig, name, frame)
	args(p)
	p("CMPB ·bf16Cvt(SB), $0")
	p("JNE %s_cvt_body", name)
	for _, ne := range []bool{false, true} {
		c := &conv{s: s, ne: ne, fn: name + "_int", out: s}
		if ne {
			c.fn = name + "_cvt"
			c.label("body")
			if pairIdx {
				p("VMOVDQU64 bf16pairs<>(SB), Z9")
			}
		} else {
			convConsts(p)
		}
		body(c)
		p("VZEROUPPER")
		p("RET")
		s.Write(c.side.Bytes())
	}
	fmt.Fprintf(s, "%s_done:\n", name)
	p("VZEROUPPER")
	p("RET")
}

// pairsData is the DATA of bf16pairs<>, VPERMW's index that interleaves
// the two halves of a ZMM of 32 words: word 2j from word j, word 2j+1
// from word 16+j.
func pairsData(s *bytes.Buffer) {
	for q := range 8 { // four words a quad
		var v uint64
		for w := range 4 {
			j := (4*q + w) / 2
			if (4*q+w)%2 == 1 {
				j += 16
			}
			v |= uint64(j) << (16 * w)
		}
		fmt.Fprintf(s, "DATA bf16pairs<>+%d(SB)/8, $0x%016x\n", 8*q, v)
	}
	s.WriteString("GLOBL bf16pairs<>(SB), RODATA|NOPTR, $64\n")
}

// convConsts loads the constants of roundReg: Z4 = 0x7FFF, Z5 = 1,
// Z6 = 0x7FFFFFFF, Z7 = +Inf's bits, Z8 = the quiet bit.
func convConsts(p func(string, ...any)) {
	for _, c := range [][2]string{{"0x7FFF", "Z4"}, {"1", "Z5"}, {"0x7FFFFFFF", "Z6"}, {"0x7F800000", "Z7"}, {"0x00400000", "Z8"}} {
		p("MOVL $%s, AX", c[0])
		p("VPBROADCASTD AX, %s", c[1])
	}
}

// roundReg leaves in r (not x) the bf16 rounding of the 16 float32 in x in
// the top 16 bits of each lane (a NaN: x with its quiet bit); it clobbers
// Z2 and K1 and reads convConsts' Z4–Z8.
func roundReg(p func(string, ...any), x, r string) {
	p("VPSRLD $16, %s, %s", x, r)
	p("VPANDD Z5, %s, %s", r, r)    // the lowest kept bit
	p("VPADDD Z4, %s, %s", r, r)    // 0x7FFF + that bit
	p("VPADDD %s, %s, %s", x, r, r) // rounded (in the top 16 bits)
	p("VPANDD Z6, %s, Z2", x)       // |x|
	p("VPCMPUD $6, Z7, Z2, K1")     // |x| > +Inf: NaN
	p("VPORD Z8, %s, K1, %s", x, r) // a NaN: x with its quiet bit, unrounded
}

// round emits a rounding of the float32 vectors Z(xs) (one or two,
// loaded): emu in the integer body; in the AVX512-BF16 body fast, with a
// side path to emu (after loading convConsts' constants) where a vector
// holds a subnormal. It clobbers K1, K2, Z2 and Z4–Z8.
func (c *conv) round(xs []int, fast, emu func()) {
	if !c.ne {
		emu()
		return
	}
	c.n++
	side, back := fmt.Sprintf("side%d", c.n), fmt.Sprintf("back%d", c.n)
	c.p("VFPCLASSPSZ $0x20, Z%d, K1", xs[0]) // subnormal lanes
	if len(xs) == 2 {
		c.p("VFPCLASSPSZ $0x20, Z%d, K2", xs[1])
		c.p("KORTESTW K2, K1")
	} else {
		c.p("KORTESTW K1, K1")
	}
	c.p("JNZ %s", c.l(side))
	fast()
	c.label(back)
	c.out = &c.side
	c.label(side)
	convConsts(c.p)
	emu()
	c.p("JMP %s", c.l(back))
	c.out = c.s
}

// bf16 rounds the 16 float32 in Zx to 16 bf16 in Yy (x ≠ y).
func (c *conv) bf16(x, y int) {
	c.round([]int{x}, func() {
		c.p("%s // VCVTNEPS2BF16 Z%d, Y%d", evex512(0x72, 0b10, y, 0, x), x, y)
	}, func() {
		c.emuBF16(x, y)
	})
}

func (c *conv) emuBF16(x, y int) {
	r := fmt.Sprintf("Z%d", y)
	roundReg(c.p, fmt.Sprintf("Z%d", x), r)
	c.p("VPSRLD $16, %s, %s", r, r)
	c.p("VPMOVDW %s, Y%d", r, y)
}

// pair rounds Zx0 and Zx1 to 16 bf16 pairs in Zr, Zx0's value in the low
// half of each 32-bit unit: the pair layout of packed operands. t is a
// temporary; the AVX512-BF16 body needs bf16pairs<> in Z9.
func (c *conv) pair(x0, x1, r, t int) {
	c.round([]int{x0, x1}, func() {
		c.p("%s // VCVTNE2PS2BF16 Z%d, Z%d, Z%d", evex512(0x72, 0b11, r, x1, x0), x0, x1, r)
		c.p("VPERMW Z%d, Z9, Z%d", r, r)
	}, func() {
		zr, zt := fmt.Sprintf("Z%d", r), fmt.Sprintf("Z%d", t)
		roundReg(c.p, fmt.Sprintf("Z%d", x0), zr)
		roundReg(c.p, fmt.Sprintf("Z%d", x1), zt)
		c.p("VPSRLD $16, %s, %s", zr, zr)
		c.p("VPSRLD $16, %s, %s", zt, zt)
		c.p("VPSLLD $16, %s, %s", zt, zt)
		c.p("VPORD %s, %s, %s", zt, zr, zr)
	})
}

// concat rounds Zx0 to the low 16 bf16 of Zr and Zx1 to the high 16; t
// is a temporary.
func (c *conv) concat(x0, x1, r, t int) {
	c.round([]int{x0, x1}, func() {
		c.p("%s // VCVTNE2PS2BF16 Z%d, Z%d, Z%d", evex512(0x72, 0b11, r, x1, x0), x0, x1, r)
	}, func() {
		c.emuBF16(x0, r)
		c.emuBF16(x1, t)
		c.p("VINSERTI64X4 $1, Y%d, Z%d, Z%d", t, r, r)
	})
}

// expVec sets Zx = exp(Zx) as expSubRowsVecAVX512 computes it, bit for
// bit: its instructions on its constants, loaded from vecTab into
// Z16–Z27 in its order (expConsts). It clobbers Z1, Z2 and K1.
func expVec(p func(string, ...any), x int) { expVecT(p, x, 1, 2) }

// expVecT is expVec with the temporaries Zt1 and Zt2.
func expVecT(p func(string, ...any), x, t1, t2 int) {
	z, a, n := fmt.Sprintf("Z%d", x), fmt.Sprintf("Z%d", t1), fmt.Sprintf("Z%d", t2)
	p("VCMPPS $0x15, Z16, %s, K1", z) // lanes at or above the lower bound (or NaN)
	p("VMOVUPS Z16, %s", a)
	p("VMAXPS %s, %s, %s", z, a, z)
	p("VMOVUPS Z17, %s", a)
	p("VMINPS %s, %s, %s", z, a, z)
	p("VMOVUPS Z18, %s", n)
	p("VFMADD231PS Z19, %s, %s", z, n)
	p("VSUBPS Z18, %s, %s", n, n) // n = round(x·log2 e)
	p("VFNMADD231PS Z20, %s, %s", n, z)
	p("VFNMADD231PS Z21, %s, %s", n, z) // r = x − n·ln 2
	p("VMOVUPS Z22, %s", a)
	for _, c := range []int{23, 24, 25, 26, 27, 27} {
		p("VFMADD213PS Z%d, %s, %s", c, z, a)
	}
	p("VSCALEFPS.Z %s, %s, K1, %s", n, a, z) // poly(r)·2ⁿ, 0 below the bound
}

// expConsts loads expVec's constants into Z16–Z27 (Z27 is 1).
func expConsts(p func(string, ...any)) {
	for i, off := range []int{0, 64, 192, 128, 256, 320, 384, 448, 512, 576, 640, 704} {
		p("VMOVUPS ·vecTab+%d(SB), Z%d", off, 16+i)
	}
}

// The offsets in vecTab of GELU's constants (internal/vecgen's tab).
const (
	tabGeluA, tabGeluB, tabGeluTMax = 896, 960, 1024
	tabGeluK1, tabGeluK2            = 1088, 1152
	tabGeluXMin, tabGeluXMax        = 1216, 1280
)

// geluRow emits the fused GELU backward of one row's 16 values: x from
// the bf16 at hAddr, dg at dAddr overwritten with GELU'(x)·dg as
// geluBackVecAVX512 computes it, and GELU(x) as geluVecAVX512 computes it
// left in Zg; both on their instructions, so the same bits. The exp is
// shared where the two take the same argument: x inside [XMin, XMax] and
// the forward's exponent at most TMax; other vectors take the backward's
// own path (label sep). It needs expConsts, geluB in Z28 and geluA in
// Z29, and clobbers Z0–Z3, Z12–Z15, K1–K3.
func geluRow(c *conv, hAddr, dAddr string, g int, sep, back string) {
	c.p("VPMOVZXWD %s, Z0", hAddr)
	c.p("VPSLLD $16, Z0, Z0") // x
	c.p("VMULPS Z0, Z0, Z1")  // x²
	c.p("VMOVUPS Z28, Z3")
	c.p("VFMADD213PS Z29, Z1, Z3")
	c.p("VMULPS Z0, Z3, Z3") // t = x·(A + B·x²)
	c.p("VCMPPS $0x1D, ·vecTab+%d(SB), Z0, K2", tabGeluXMin)
	c.p("VCMPPS $0x12, ·vecTab+%d(SB), Z0, K3", tabGeluXMax)
	c.p("KANDW K3, K2, K2")
	c.p("VCMPPS $0x12, ·vecTab+%d(SB), Z3, K3", tabGeluTMax)
	c.p("KANDW K3, K2, K2") // the lanes whose exp the backward shares
	c.p("VMOVAPS Z3, Z12")
	expVecT(c.p, 12, 2, 13) // e = exp(t)
	c.p("VADDPS Z27, Z12, Z13")
	c.p("VDIVPS Z13, Z0, Z%d", g) // GELU(x) = x / (1 + e)
	c.p("KORTESTW K2, K2")
	c.p("JCC %s", c.l(sep))
	c.p("VMOVAPS Z12, Z13") // the backward's e, x and x²: the forward's
	c.p("VMOVAPS Z0, Z14")
	c.p("VMOVAPS Z1, Z15")
	c.label(back)
	c.p("VADDPS Z27, Z13, Z2")
	c.p("VMOVUPS Z27, Z3")
	c.p("VDIVPS Z2, Z3, Z3") // s = 1/(1+e)
	c.p("VMULPS Z3, Z13, Z2")
	c.p("VMULPS Z3, Z2, Z2") // e·s²
	c.p("VMOVUPS ·vecTab+%d(SB), Z13", tabGeluK2)
	c.p("VFMADD213PS ·vecTab+%d(SB), Z15, Z13", tabGeluK1)
	c.p("VMULPS Z14, Z13, Z13")
	c.p("VFMADD231PS Z13, Z2, Z3") // GELU'(x) = s + e·s²·x·(K1 + K2·x²)
	c.p("VMULPS %s, Z3, Z3", dAddr)
	c.p("VMOVUPS Z3, %s", dAddr)
	// The backward's own path, after the body: x clamped to [XMin, XMax],
	// the exponent to TMax.
	out := c.out
	c.out = &c.side
	c.label(sep)
	c.p("VMOVUPS ·vecTab+%d(SB), Z13", tabGeluXMin)
	c.p("VMAXPS Z0, Z13, Z14")
	c.p("VMOVUPS ·vecTab+%d(SB), Z13", tabGeluXMax)
	c.p("VMINPS Z14, Z13, Z14") // x clamped
	c.p("VMULPS Z14, Z14, Z15")
	c.p("VMOVUPS Z28, Z13")
	c.p("VFMADD213PS Z29, Z15, Z13")
	c.p("VMULPS Z14, Z13, Z13")
	c.p("VMOVUPS ·vecTab+%d(SB), Z2", tabGeluTMax)
	c.p("VMINPS Z13, Z2, Z13")
	expVecT(c.p, 13, 2, 3)
	c.p("JMP %s", c.l(back))
	c.out = out
}

// evex512 returns the bytes of a 512-bit EVEX instruction of map 0F38,
// W0, on registers, which Go's assembler does not know: opcode op, pp the
// implied prefix (0b10: F3, 0b11: F2), ModRM.reg = dst, vvvv = src1 (0
// where the instruction has none: all ones inverted), ModRM.rm = src2.
// Bytes: 62, then R̄ X̄ B̄ R̄' 0 0 m m (map 0F38: mm = 10), then
// W v̄v̄v̄v̄ 1 p p, then z L'L b V̄' a a a (L'L = 10: 512 bits), the opcode
// and ModRM (mod 11). R, R' extend dst, B, X extend src2, vvvv and V'
// (inverted) hold src1.
func evex512(op, pp, dst, src1, src2 int) string {
	bit := func(r, i int) int { return r >> i & 1 }
	p0 := (1-bit(dst, 3))<<7 | (1-bit(src2, 4))<<6 | (1-bit(src2, 3))<<5 | (1-bit(dst, 4))<<4 | 0b10
	p1 := (^src1&0xF)<<3 | 1<<2 | pp
	p2 := 0b10<<5 | (1-bit(src1, 4))<<3
	modrm := 0b11<<6 | (dst&7)<<3 | src2&7
	return fmt.Sprintf("BYTE $0x62; BYTE $0x%02X; BYTE $0x%02X; BYTE $0x%02X; BYTE $0x%02X; BYTE $0x%02X", p0, p1, p2, op, modrm)
}

// vdpbf16ps returns the bytes of VDPBF16PS zmm(dst), zmm(src1), zmm(src2)
// (EVEX.512.F3.0F38.W0 52 /r: dst[i] += src1.bf16[2i]·src2.bf16[2i] +
// src1.bf16[2i+1]·src2.bf16[2i+1]).
func vdpbf16ps(dst, src1, src2 int) string { return evex512(0x52, 0b10, dst, src1, src2) }

// convKernels emits the conversions, 16 values per step (n a multiple of
// 16), and the packers that round float32 into the bf16 GEMM's layouts.
func convKernels(s, g *bytes.Buffer) {
	pairsData(s)
	// toBF16AVX512: n values.
	convFunc(s, g, "toBF16AVX512", "(dst *BF16, src *float32, n int)", "$0-24",
		"// toBF16AVX512 converts n (a multiple of 16) float32 values to bf16.\n", false,
		func(p func(string, ...any)) {
			p("MOVQ dst+0(FP), DI")
			p("MOVQ src+8(FP), SI")
			p("MOVQ n+16(FP), CX")
			p("SHRQ $4, CX")
			p("JEQ toBF16AVX512_done")
		}, func(c *conv) {
			c.label("loop")
			c.p("VMOVDQU32 (SI), Z0")
			c.bf16(0, 1)
			c.p("VMOVDQU Y1, (DI)")
			c.p("ADDQ $64, SI")
			c.p("ADDQ $32, DI")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("loop"))
		})
	// keepBF16AVX512: ToBF16 and the rounded values written back over x
	// in one pass (FromBF16 of the result is the top 16 bits); and
	// keepBF16NTAVX512, the same with the bf16 written by non-temporal
	// stores, which skip reading dst's lines into the cache first.
	for _, k := range []struct{ name, doc, store string }{
		{"keepBF16AVX512", "// keepBF16AVX512 converts n (a multiple of 16) float32 values x to bf16 in\n// dst and overwrites x with their rounded values.\n", "VMOVDQU"},
		{"keepBF16NTAVX512", "// keepBF16NTAVX512 is keepBF16AVX512 with non-temporal stores of dst, which\n// must be 32-byte aligned.\n", "VMOVNTDQ"},
	} {
		convFunc(s, g, k.name, "(dst *BF16, x *float32, n int)", "$0-24", k.doc, false,
			func(p func(string, ...any)) {
				p("MOVQ dst+0(FP), DI")
				p("MOVQ x+8(FP), SI")
				p("MOVQ n+16(FP), CX")
				p("SHRQ $4, CX")
				p("JEQ %s_done", k.name)
			}, func(c *conv) {
				c.label("loop")
				c.p("VMOVDQU32 (SI), Z0")
				c.bf16(0, 1)
				c.p("%s Y1, (DI)", k.store)
				c.p("VPMOVZXWD Y1, Z3")
				c.p("VPSLLD $16, Z3, Z3")
				c.p("VMOVDQU32 Z3, (SI)")
				c.p("ADDQ $64, SI")
				c.p("ADDQ $32, DI")
				c.p("DECQ CX")
				c.p("JNE %s", c.l("loop"))
				if k.store == "VMOVNTDQ" {
					c.p("SFENCE")
				}
			})
	}
	// pairPanelAVX512: a whole panel of packed B in one call, pairs pairs of
	// rows (row 2q at src + 2q·ldb, row 2q+1 one ldb further) of n16·16
	// columns each, pair q at dst + q·128 elements.
	convFunc(s, g, "pairPanelAVX512", "(dst *BF16, src *float32, ldb, pairs, n16 int)", "$0-40",
		"// pairPanelAVX512 converts pairs row pairs of n16·16 float32 columns (rows\n// ldb apart from src) to bf16 pairs, pair q at dst[q·128:].\n", true,
		func(p func(string, ...any)) {
			p("MOVQ dst+0(FP), DI")
			p("MOVQ src+8(FP), SI")
			p("MOVQ ldb+16(FP), BX")
			p("SHLQ $2, BX")
			p("MOVQ pairs+24(FP), CX")
			p("MOVQ n16+32(FP), DX")
			p("TESTQ CX, CX")
			p("JEQ pairPanelAVX512_done")
			p("TESTQ DX, DX")
			p("JEQ pairPanelAVX512_done")
		}, func(c *conv) {
			c.label("pair")
			c.p("MOVQ SI, R8")
			c.p("LEAQ (SI)(BX*1), R9")
			c.p("MOVQ DI, R10")
			c.p("MOVQ DX, R11")
			c.label("vec")
			c.p("VMOVDQU32 (R8), Z0")
			c.p("VMOVDQU32 (R9), Z10")
			c.pair(0, 10, 1, 11)
			c.p("VMOVDQU32 Z1, (R10)")
			c.p("ADDQ $64, R8")
			c.p("ADDQ $64, R9")
			c.p("ADDQ $64, R10")
			c.p("DECQ R11")
			c.p("JNE %s", c.l("vec"))
			c.p("LEAQ (SI)(BX*2), SI")
			c.p("ADDQ $256, DI")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("pair"))
		})
	// toBF16RowsAVX512: rows rows of n16·16 values, src rows sld floats
	// apart, dst rows dld bf16 apart.
	convFunc(s, g, "toBF16RowsAVX512", "(dst *BF16, dld int, src *float32, sld, rows, n16 int)", "$0-48",
		"// toBF16RowsAVX512 converts rows rows of n16·16 float32 values (rows sld\n// apart) to bf16 rows dld apart.\n", false,
		func(p func(string, ...any)) {
			p("MOVQ dst+0(FP), DI")
			p("MOVQ dld+8(FP), R12")
			p("SHLQ $1, R12")
			p("MOVQ src+16(FP), SI")
			p("MOVQ sld+24(FP), BX")
			p("SHLQ $2, BX")
			p("MOVQ rows+32(FP), CX")
			p("MOVQ n16+40(FP), DX")
			p("TESTQ CX, CX")
			p("JEQ toBF16RowsAVX512_done")
			p("TESTQ DX, DX")
			p("JEQ toBF16RowsAVX512_done")
		}, func(c *conv) {
			c.label("row")
			c.p("MOVQ SI, R8")
			c.p("MOVQ DI, R10")
			c.p("MOVQ DX, R11")
			c.label("vec")
			c.p("VMOVDQU32 (R8), Z0")
			c.bf16(0, 1)
			c.p("VMOVDQU Y1, (R10)")
			c.p("ADDQ $64, R8")
			c.p("ADDQ $32, R10")
			c.p("DECQ R11")
			c.p("JNE %s", c.l("vec"))
			c.p("ADDQ BX, SI")
			c.p("ADDQ R12, DI")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("row"))
		})
	// expSubMulPackAVX512: the backward of an attention tile in bf16. For
	// pairs pairs of rows of S and dP [2·pairs, n64·64] (float32, rows
	// n64·64 apart), lse and d (one float32 a row): P = exp(S − lse_r), on
	// expSubRowsVecAVX512's instructions and constants (vecTab), and dS =
	// P ⊙ (dP − d_r); dS rounded to bf16 rows (dsa, rows n64·64 apart:
	// packed A), dS and P rounded to pairs of rows in the panels of packed
	// B (dsb, pb: pair q at q·128 of each panel, panels ps bf16 apart).
	// Neither P nor dS is stored in float32.
	convFunc(s, g, "expSubMulPackAVX512", "(dsa, dsb, pb *BF16, s, dp, lse, d *float32, pairs, n64, ps int)", "$0-80",
		"// expSubMulPackAVX512 computes P = exp(S − lse_r) and dS = P ⊙ (dP − d_r) for\n// pairs row pairs of n64·64 columns, and packs dS as A rows (dsa) and B\n// panels (dsb), and P as B panels (pb), panels ps bf16 apart.\n", true,
		func(p func(string, ...any)) {
			expConsts(p)
			p("MOVQ dsa+0(FP), R12")
			p("MOVQ dsb+8(FP), R8")
			p("MOVQ pb+16(FP), DI")
			p("MOVQ s+24(FP), SI")
			p("MOVQ dp+32(FP), DX")
			p("MOVQ lse+40(FP), R9")
			p("MOVQ pairs+56(FP), CX")
			p("MOVQ n64+64(FP), BX")
			p("MOVQ ps+72(FP), R14")
			p("SHLQ $1, R14") // panel stride in bytes
			p("TESTQ CX, CX")
			p("JEQ expSubMulPackAVX512_done")
			p("TESTQ BX, BX")
			p("JEQ expSubMulPackAVX512_done")
			p("SHLQ $7, BX")  // bf16 row bytes: n64·64·2
			p("MOVQ BX, R13") // dsa's row stride in bytes
			p("SHLQ $1, BX")  // float32 row bytes
		}, func(c *conv) {
			c.label("pair")
			c.p("MOVQ pairs+56(FP), R10")
			c.p("SUBQ CX, R10") // q
			c.p("MOVQ d+48(FP), AX")
			c.p("VBROADCASTSS (AX)(R10*8), Z28")
			c.p("VBROADCASTSS 4(AX)(R10*8), Z29")
			c.p("SHLQ $8, R10") // pair q at q·128 bf16 of each panel
			c.p("VBROADCASTSS (R9), Z12")
			c.p("VBROADCASTSS 4(R9), Z13")
			c.p("MOVQ n64+64(FP), R11")
			c.label("panel")
			for k := range 4 {
				c.p("VMOVDQU32 (SI), Z0")
				c.p("VSUBPS Z12, Z0, Z0")
				expVec(c.p, 0)
				c.p("VMOVDQU32 (SI)(BX*1), Z10")
				c.p("VSUBPS Z13, Z10, Z10")
				expVec(c.p, 10)
				c.pair(0, 10, 1, 11)
				c.p("VMOVDQU32 Z1, %d(DI)(R10*1)", 64*k)
				c.p("VMOVDQU32 (DX), Z14")
				c.p("VSUBPS Z28, Z14, Z14")
				c.p("VMULPS Z0, Z14, Z14")
				c.p("VMOVDQU32 (DX)(BX*1), Z15")
				c.p("VSUBPS Z29, Z15, Z15")
				c.p("VMULPS Z10, Z15, Z15")
				c.bf16(14, 1)
				c.p("VMOVDQU Y1, (R12)")
				c.bf16(15, 3)
				c.p("VMOVDQU Y3, (R12)(R13*1)")
				c.pair(14, 15, 1, 11)
				c.p("VMOVDQU32 Z1, %d(R8)(R10*1)", 64*k)
				c.p("ADDQ $64, SI")
				c.p("ADDQ $64, DX")
				c.p("ADDQ $32, R12")
			}
			c.p("ADDQ R14, R10")
			c.p("DECQ R11")
			c.p("JNE %s", c.l("panel"))
			c.p("ADDQ BX, SI") // past the pair's second row
			c.p("ADDQ BX, DX")
			c.p("ADDQ R13, R12")
			c.p("ADDQ $8, R9")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("pair"))
		})
	// expSubRowsBF16AVX512: the forward of an attention tile in bf16. For
	// rows rows of n16·16 float32 scores x (rows n16·16 apart) and their
	// maxima m: P = exp(x − m_r), on expSubRowsVecAVX512's instructions,
	// rounded to bf16 rows of dst (dld apart), and each row's sum of the
	// float32 exps into sums, added in expSubRowsVecAVX512's order (two
	// running vectors, even and odd, then halved down to one lane). x is
	// left as it is.
	convFunc(s, g, "expSubRowsBF16AVX512", "(dst *BF16, dld int, x *float32, n16, rows int, m, sums *float32)", "$0-56",
		"// expSubRowsBF16AVX512 sets rows rows of dst (dld apart) to bf16(exp(x − m_r))\n// for n16·16 float32 values of x a row, and sums[r] to the row's sum of the\n// float32 exps.\n", false,
		func(p func(string, ...any)) {
			expConsts(p)
			p("MOVQ dst+0(FP), DI")
			p("MOVQ dld+8(FP), R12")
			p("SHLQ $1, R12")
			p("MOVQ x+16(FP), SI")
			p("MOVQ n16+24(FP), BX")
			p("MOVQ rows+32(FP), CX")
			p("MOVQ m+40(FP), R9")
			p("MOVQ sums+48(FP), R11")
			p("TESTQ CX, CX")
			p("JEQ expSubRowsBF16AVX512_done")
			p("TESTQ BX, BX")
			p("JEQ expSubRowsBF16AVX512_done")
		}, func(c *conv) {
			c.label("row")
			c.p("VBROADCASTSS (R9), Z14")
			c.p("VXORPS Z10, Z10, Z10")
			c.p("VXORPS Z11, Z11, Z11")
			c.p("MOVQ BX, DX")
			c.p("MOVQ DI, R10")
			c.label("loop2")
			c.p("CMPQ DX, $2")
			c.p("JLT %s", c.l("loop1"))
			c.p("VMOVUPS (SI), Z0")
			c.p("VMOVUPS 64(SI), Z3")
			c.p("VSUBPS Z14, Z0, Z0")
			c.p("VSUBPS Z14, Z3, Z3")
			expVec(c.p, 0)
			expVecT(c.p, 3, 1, 2)
			c.p("VADDPS Z0, Z10, Z10")
			c.p("VADDPS Z3, Z11, Z11")
			c.bf16(0, 12)
			c.p("VMOVDQU Y12, (R10)")
			c.bf16(3, 13)
			c.p("VMOVDQU Y13, 32(R10)")
			c.p("ADDQ $128, SI")
			c.p("ADDQ $64, R10")
			c.p("SUBQ $2, DX")
			c.p("JMP %s", c.l("loop2"))
			c.label("loop1")
			c.p("TESTQ DX, DX")
			c.p("JEQ %s", c.l("sum"))
			c.p("VMOVUPS (SI), Z0")
			c.p("VSUBPS Z14, Z0, Z0")
			expVec(c.p, 0)
			c.p("VADDPS Z0, Z10, Z10")
			c.bf16(0, 12)
			c.p("VMOVDQU Y12, (R10)")
			c.p("ADDQ $64, SI")
			c.label("sum")
			c.p("VADDPS Z11, Z10, Z10")
			c.p("VEXTRACTF64X4 $1, Z10, Y1")
			c.p("VADDPS Y1, Y10, Y10")
			c.p("VEXTRACTF128 $1, Y10, X1")
			c.p("VADDPS X1, X10, X10")
			c.p("VMOVHLPS X10, X10, X1")
			c.p("VADDPS X1, X10, X10")
			c.p("VMOVSHDUP X10, X1")
			c.p("VADDSS X1, X10, X10")
			c.p("VMOVSS X10, (R11)")
			c.p("ADDQ $4, R11")
			c.p("ADDQ $4, R9")
			c.p("ADDQ R12, DI")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("row"))
		})
	// geluBackPackAVX512: the feed-forward backward in bf16 from fc2's
	// input gradient to fc1's output gradient. For pairs pairs of rows of
	// h (bf16, rows n64·64 apart) and dg (float32, rows n64·64 apart):
	// dg = GELU'(h)·dg in place, and GELU(h) rounded to pairs of rows in
	// the panels of packed B (gb: pair q at q·128 of each panel, panels ps
	// bf16 apart), one exp for the two where they share it (geluRow).
	convFunc(s, g, "geluBackPackAVX512", "(dg *float32, gb, h *BF16, pairs, n64, ps int)", "$0-48",
		"// geluBackPackAVX512 sets dg = GELU'(h)·dg for pairs row pairs of n64·64\n// columns of h (bf16) and packs GELU(h) as B panels into gb, panels ps bf16\n// apart.\n", true,
		func(p func(string, ...any)) {
			expConsts(p)
			p("VMOVUPS ·vecTab+%d(SB), Z28", tabGeluB)
			p("VMOVUPS ·vecTab+%d(SB), Z29", tabGeluA)
			p("MOVQ dg+0(FP), DX")
			p("MOVQ gb+8(FP), DI")
			p("MOVQ h+16(FP), SI")
			p("MOVQ pairs+24(FP), CX")
			p("MOVQ n64+32(FP), BX")
			p("MOVQ ps+40(FP), R14")
			p("SHLQ $1, R14") // panel stride in bytes
			p("TESTQ CX, CX")
			p("JEQ geluBackPackAVX512_done")
			p("TESTQ BX, BX")
			p("JEQ geluBackPackAVX512_done")
			p("SHLQ $7, BX")  // bf16 row bytes: n64·64·2
			p("MOVQ BX, R13") // h's row stride in bytes
			p("SHLQ $1, BX")  // float32 row bytes
		}, func(c *conv) {
			c.label("pair")
			c.p("MOVQ pairs+24(FP), R10")
			c.p("SUBQ CX, R10")
			c.p("SHLQ $8, R10") // pair q at q·128 bf16 of each panel
			c.p("MOVQ n64+32(FP), R11")
			c.label("panel")
			for k := range 4 {
				geluRow(c, "(SI)", "(DX)", 10, fmt.Sprintf("sep%da", k), fmt.Sprintf("back%da", k))
				geluRow(c, "(SI)(R13*1)", "(DX)(BX*1)", 11, fmt.Sprintf("sep%db", k), fmt.Sprintf("back%db", k))
				c.pair(10, 11, 1, 12)
				c.p("VMOVDQU32 Z1, %d(DI)(R10*1)", 64*k)
				c.p("ADDQ $32, SI")
				c.p("ADDQ $64, DX")
			}
			c.p("ADDQ R14, R10")
			c.p("DECQ R11")
			c.p("JNE %s", c.l("panel"))
			c.p("ADDQ R13, SI") // past the pair's second row
			c.p("ADDQ BX, DX")
			c.p("DECQ CX")
			c.p("JNE %s", c.l("pair"))
		})
	// pairT16AVX512: 32 float32 rows of 16 columns (src, rows lda apart)
	// rounded to bf16 pairs of rows (2p, 2p+1), 16 vectors of 16 pairs,
	// then transposed as a 16×16 tile of 32-bit pairs (transpose16) and
	// stored as 16 rows of 16 pairs, st bf16 apart: the transposed A of
	// packBF16A, a tile at a time.
	convFunc(s, g, "pairT16AVX512", "(dst *BF16, st int, src *float32, lda int)", "$0-32",
		"// pairT16AVX512 packs a 32×16 float32 tile of a transposed A (rows lda\n// apart) as 16 rows of 16 bf16 pairs, st bf16 apart.\n", true,
		func(p func(string, ...any)) {
			p("MOVQ dst+0(FP), DI")
			p("MOVQ st+8(FP), R12")
			p("SHLQ $1, R12")
			p("MOVQ src+16(FP), R8")
			p("MOVQ lda+24(FP), BX")
			p("SHLQ $2, BX")
		}, func(c *conv) {
			r := func(i int) string { return fmt.Sprintf("Z%d", 10+i) } // the 16 pair vectors
			for i := range 16 {
				c.p("VMOVDQU32 (R8), Z0")
				c.p("VMOVDQU32 (R8)(BX*1), Z3")
				c.pair(0, 3, 10+i, 26)
				c.p("LEAQ (R8)(BX*2), R8")
			}
			transpose16(c.p, r)
			for j := range 16 {
				c.p("VMOVDQU32 %s, (DI)", r(j))
				c.p("ADDQ R12, DI")
			}
		})
	// pairTB16AVX512: 16 float32 rows of 32 values (src, rows ldb apart),
	// each rounded to 16 bf16 pairs of adjacent values, transposed as a
	// 16×16 tile of pairs and stored as 16 rows of 16 pairs 64 pairs
	// apart: a tile of a panel of the transposed packed B.
	convFunc(s, g, "pairTB16AVX512", "(dst *BF16, src *float32, ldb int)", "$0-24",
		"// pairTB16AVX512 packs 16 rows of 32 float32 (rows ldb apart) as a tile of\n// a transposed B's panel: row p of the tile (64 pairs apart) holds pair p\n// of every source row.\n", false,
		func(p func(string, ...any)) {
			p("MOVQ dst+0(FP), DI")
			p("MOVQ src+8(FP), R8")
			p("MOVQ ldb+16(FP), BX")
			p("SHLQ $2, BX")
		}, func(c *conv) {
			r := func(i int) string { return fmt.Sprintf("Z%d", 10+i) }
			for i := range 16 {
				c.p("VMOVDQU32 (R8), Z0")
				c.p("VMOVDQU32 64(R8), Z3")
				c.concat(0, 3, 10+i, 27)
				c.p("ADDQ BX, R8")
			}
			transpose16(c.p, r)
			for j := range 16 {
				c.p("VMOVDQU32 %s, %d(DI)", r(j), j*4*bf16PanelAsm)
			}
		})
	// fromBF16AVX512: bf16 → float32 is a shift.
	p := func(format string, args ...any) { fmt.Fprintf(s, "\t"+format+"\n", args...) }
	fmt.Fprintf(g, "// fromBF16AVX512 converts n (a multiple of 16) bf16 values to float32.\n//\n//go:noescape\nfunc fromBF16AVX512(dst *float32, src *BF16, n int)\n\n")
	s.WriteString("\n// func fromBF16AVX512(dst *float32, src *BF16, n int)\nTEXT ·fromBF16AVX512(SB), NOSPLIT, $0-24\n")
	p("MOVQ dst+0(FP), DI")
	p("MOVQ src+8(FP), SI")
	p("MOVQ n+16(FP), CX")
	p("SHRQ $4, CX")
	p("JEQ frombf_done")
	s.WriteString("frombf_loop:\n")
	p("VPMOVZXWD (SI), Z0")
	p("VPSLLD $16, Z0, Z0")
	p("VMOVDQU32 Z0, (DI)")
	p("ADDQ $32, SI")
	p("ADDQ $64, DI")
	p("DECQ CX")
	p("JNE frombf_loop")
	s.WriteString("frombf_done:\n")
	p("VZEROUPPER")
	p("RET")
}
