#include "textflag.h"

// Lane indices 15…0: VPERMPS with it reverses a vector.
DATA revidx<>+0(SB)/4, $15
DATA revidx<>+4(SB)/4, $14
DATA revidx<>+8(SB)/4, $13
DATA revidx<>+12(SB)/4, $12
DATA revidx<>+16(SB)/4, $11
DATA revidx<>+20(SB)/4, $10
DATA revidx<>+24(SB)/4, $9
DATA revidx<>+28(SB)/4, $8
DATA revidx<>+32(SB)/4, $7
DATA revidx<>+36(SB)/4, $6
DATA revidx<>+40(SB)/4, $5
DATA revidx<>+44(SB)/4, $4
DATA revidx<>+48(SB)/4, $3
DATA revidx<>+52(SB)/4, $2
DATA revidx<>+56(SB)/4, $1
DATA revidx<>+60(SB)/4, $0
GLOBL revidx<>(SB), RODATA|NOPTR, $64

// Lane signs (−1)^(1+l): chunk lanes cover c = 1+16i+l, and 16 is even.
DATA altsgn<>+0(SB)/4, $0xbf800000
DATA altsgn<>+4(SB)/4, $0x3f800000
DATA altsgn<>+8(SB)/4, $0xbf800000
DATA altsgn<>+12(SB)/4, $0x3f800000
DATA altsgn<>+16(SB)/4, $0xbf800000
DATA altsgn<>+20(SB)/4, $0x3f800000
DATA altsgn<>+24(SB)/4, $0xbf800000
DATA altsgn<>+28(SB)/4, $0x3f800000
DATA altsgn<>+32(SB)/4, $0xbf800000
DATA altsgn<>+36(SB)/4, $0x3f800000
DATA altsgn<>+40(SB)/4, $0xbf800000
DATA altsgn<>+44(SB)/4, $0x3f800000
DATA altsgn<>+48(SB)/4, $0xbf800000
DATA altsgn<>+52(SB)/4, $0x3f800000
DATA altsgn<>+56(SB)/4, $0xbf800000
DATA altsgn<>+60(SB)/4, $0x3f800000
GLOBL altsgn<>(SB), RODATA|NOPTR, $64

// func foldAVX512(e, o, a, b *float32, nc int) float32
//
// Z29 accumulates the lane-signed sums e·(−1)^(1+l), reduced at the end.
TEXT ·foldAVX512(SB), NOSPLIT, $0-44
	MOVQ e+0(FP), DI
	MOVQ o+8(FP), SI
	MOVQ a+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ nc+32(FP), CX
	VMOVUPS revidx<>(SB), Z30
	VMOVUPS altsgn<>(SB), Z31
	VXORPS Z29, Z29, Z29
	TESTQ CX, CX
	JZ   donef
loopf:
	VMOVUPS (R8), Z0
	VMOVUPS (R9), Z1
	VPERMPS Z1, Z30, Z1
	VADDPS Z1, Z0, Z2
	VSUBPS Z1, Z0, Z3
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, (SI)
	VFMADD231PS Z31, Z2, Z29 // alt += e·sign
	ADDQ $64, R8
	SUBQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  loopf
donef:
	VMOVAPS Z29, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func copyAVX512(dst, src *float32, nc int, acc bool)
TEXT ·copyAVX512(SB), NOSPLIT, $0-25
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nc+16(FP), CX
	MOVBLZX acc+24(FP), BX
	TESTQ CX, CX
	JZ   donec
	TESTQ BX, BX
	JNZ  loopca
loopc:
	VMOVUPS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopc
	JMP  donec
loopca:
	VMOVUPS (SI), Z0
	VADDPS (DI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopca
donec:
	VZEROUPPER
	RET

// func revAVX512(dst, src *float32, nc int, acc bool)
TEXT ·revAVX512(SB), NOSPLIT, $0-25
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nc+16(FP), CX
	MOVBLZX acc+24(FP), BX
	VMOVUPS revidx<>(SB), Z30
	TESTQ CX, CX
	JZ   doner
	TESTQ BX, BX
	JNZ  loopra
loopr:
	VMOVUPS (SI), Z0
	VPERMPS Z0, Z30, Z0
	VMOVUPS Z0, (DI)
	SUBQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopr
	JMP  doner
loopra:
	VMOVUPS (SI), Z0
	VPERMPS Z0, Z30, Z0
	VADDPS (DI), Z0, Z0
	VMOVUPS Z0, (DI)
	SUBQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loopra
doner:
	VZEROUPPER
	RET

// func sumDiffAVX512(s, d, a, b *float32, nc int)
//
// Both inputs are loaded before either output is stored, so s and d may be
// a and b.
TEXT ·sumDiffAVX512(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), DI
	MOVQ d+8(FP), SI
	MOVQ a+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ nc+32(FP), CX
	TESTQ CX, CX
	JZ   donesd
loopsd:
	VMOVUPS (R8), Z0
	VMOVUPS (R9), Z1
	VADDPS Z1, Z0, Z2
	VSUBPS Z1, Z0, Z3
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, (SI)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  loopsd
donesd:
	VZEROUPPER
	RET

// func foldColsAVX512(e, o, a, b *float32, rows, stride int)
//
// Row t reads a and b at t·stride floats and writes e and o at 16·t.
TEXT ·foldColsAVX512(SB), NOSPLIT, $0-48
	MOVQ e+0(FP), DI
	MOVQ o+8(FP), SI
	MOVQ a+16(FP), R8
	MOVQ b+24(FP), R9
	MOVQ rows+32(FP), CX
	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ DX, R10
	SHLQ $4, R10 // 16 rows ahead
	VMOVUPS revidx<>(SB), Z30
	TESTQ CX, CX
	JZ   donefc
loopfc:
	// Rows are a stride apart, so every few rows start a new 4 KiB page,
	// where hardware prefetchers stop; prefetch 16 rows ahead (never
	// faults, even past the end).
	PREFETCHT0 (R8)(R10*1)
	PREFETCHT0 (R9)(R10*1)
	PREFETCHT0 60(R9)(R10*1)
	VMOVUPS (R8), Z0
	VMOVUPS (R9), Z1
	VPERMPS Z1, Z30, Z1
	VADDPS Z1, Z0, Z2
	VSUBPS Z1, Z0, Z3
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, (SI)
	ADDQ DX, R8
	ADDQ DX, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ  loopfc
donefc:
	VZEROUPPER
	RET

// func prefetchLines(p *float32, n int)
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JZ   donepf
looppf:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  looppf
donepf:
	RET

// PFROW(R, TO, BACK) prefetches, for foldPackAVX512, the row R14 bytes
// ahead of R in the direction TO (ADDQ or SUBQ; BACK undoes it): the
// block's 16 floats at R and the two lines of their partners at R+AX.
#define PFROW(R, TO, BACK) \
	TO R14, R; \
	PREFETCHT0 (R); \
	PREFETCHT0 (R)(AX*1); \
	PREFETCHT0 60(R)(AX*1); \
	BACK R14, R

// FOLDROW(R, ZR, ZI) folds one row for foldPackAVX512: ZR = a + a',
// ZI = a − a' with a the 16 floats at R and a' the 16 at R+AX reversed
// (Z30), the partner load masked by K1 and ZI's lanes by K2.
#define FOLDROW(R, ZR, ZI) \
	VMOVUPS (R), Z16; \
	VMOVUPS.Z (R)(AX*1), K1, Z17; \
	VPERMPS Z17, Z30, Z17; \
	VADDPS Z17, Z16, ZR; \
	VSUBPS.Z Z17, Z16, K2, ZI

// func foldPackAVX512(or, or2, x0, x1, x2, x3, c, s *float32, mo, stride, do, cnt, first int)
//
// For j < cnt: rows x0 + j·stride (k), x1 − j·stride (−k), x2 + j·stride
// (k+M) and x3 − j·stride (M−k) are folded (z = a + i·a' with a the 16
// floats at the row pointer, a' the 16 at row pointer + mo read reversed:
// zr = a + a', zi = a − a') and packed as fft.PackHalf does, with
// c + i·s = c[j] + i·s[j]: swap Z[k] goes to or + 64j (imaginary part at
// do bytes further) and swap Z[M−k] = (B_re − A_im, A_re + B_im) to
// or2 − 64j. With first ≠ 0 (block 0: lane 0 is channel 0, which has no
// partner) the partner loads leave out the element past the block's
// partners (x[t, D], lane 0 once reversed: K1) and lane 0 of zi is zeroed
// (K2), so lane 0 gives zr = x[t, 0], zi = 0 as foldBlock does (zi of
// channel 0 only feeds the odd part of its time transform, which the
// output pass never reads, so K2 keeps z exact rather than changing the
// output). Registers: R8–R11 the rows, AX = mo, R12 = stride, R14 = 8
// rows (prefetch distance), DX/BX walk c/s, CX = do.
TEXT ·foldPackAVX512(SB), NOSPLIT, $0-104
	MOVQ or+0(FP), DI
	MOVQ or2+8(FP), SI
	MOVQ x0+16(FP), R8
	MOVQ x1+24(FP), R9
	MOVQ x2+32(FP), R10
	MOVQ x3+40(FP), R11
	MOVQ c+48(FP), DX
	MOVQ s+56(FP), BX
	MOVQ mo+64(FP), AX
	MOVQ stride+72(FP), R12
	MOVL $0x3f000000, CX
	VPBROADCASTD CX, Z29 // 0.5
	MOVL $0xffff, R13
	MOVL $0xffff, R14
	MOVQ first+96(FP), CX
	TESTQ CX, CX
	JZ   masksfp
	MOVL $0x7fff, R13
	MOVL $0xfffe, R14
masksfp:
	KMOVW R13, K1
	KMOVW R14, K2
	MOVQ do+80(FP), CX
	MOVQ cnt+88(FP), R13
	SHLQ $2, R12
	MOVQ R12, R14
	SHLQ $3, R14
	VMOVUPS revidx<>(SB), Z30
	TESTQ R13, R13
	JZ   donefp
loopfp:
	// Rows are a stride apart: prefetch each stream's row 8 ahead (its
	// own 16 floats and the two lines of its partners).
	PFROW(R8, ADDQ, SUBQ)
	PFROW(R10, ADDQ, SUBQ)
	PFROW(R9, SUBQ, ADDQ)
	PFROW(R11, SUBQ, ADDQ)
	FOLDROW(R8, Z0, Z1)
	FOLDROW(R9, Z2, Z3)
	FOLDROW(R10, Z4, Z5)
	FOLDROW(R11, Z6, Z7)

	VBROADCASTSS (DX), Z20
	VBROADCASTSS (BX), Z21
	VADDPS Z2, Z0, Z8
	VMULPS Z29, Z8, Z8   // xr = (r0 + r1)/2
	VSUBPS Z1, Z3, Z9
	VMULPS Z29, Z9, Z9   // xi = (i1 − i0)/2
	VADDPS Z6, Z4, Z10
	VMULPS Z29, Z10, Z10 // yr = (r2 + r3)/2
	VSUBPS Z5, Z7, Z11
	VMULPS Z29, Z11, Z11 // yi = (i3 − i2)/2
	VADDPS Z10, Z8, Z12  // ar
	VADDPS Z11, Z9, Z13  // ai
	VSUBPS Z10, Z8, Z14  // dr
	VSUBPS Z11, Z9, Z15  // di
	VMULPS Z21, Z15, Z16      // di·s
	VFMSUB231PS Z20, Z14, Z16 // bR = dr·c − di·s
	VMULPS Z20, Z15, Z17      // di·c
	VFMADD231PS Z21, Z14, Z17 // bI = dr·s + di·c
	VADDPS Z16, Z13, Z18 // ai + bR
	VSUBPS Z17, Z12, Z19 // ar − bI
	VSUBPS Z13, Z16, Z24 // bR − ai
	VADDPS Z17, Z12, Z25 // ar + bI
	VMOVUPS Z18, (DI)
	VMOVUPS Z19, (DI)(CX*1)
	VMOVUPS Z24, (SI)
	VMOVUPS Z25, (SI)(CX*1)

	ADDQ $64, DI
	SUBQ $64, SI
	ADDQ $4, DX
	ADDQ $4, BX
	ADDQ R12, R8
	SUBQ R12, R9
	ADDQ R12, R10
	SUBQ R12, R11
	DECQ R13
	JNZ  loopfp
donefp:
	VZEROUPPER
	RET
