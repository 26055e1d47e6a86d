//go:build !purego

#include "textflag.h"

// RADIX4(S1, S3) is one radix-4 butterfly on 16 lanes: it loads x0…x3 at
// R8 (re) and R9 (im) plus 0, R10, 2·R10 and R11 bytes, forms
// y0 = t0 + t2 and b2 = t0 − t2, b1 = t1 − i·t3, b3 = t1 + i·t3 (t0, t1 =
// x0 ± x2, t2, t3 = x1 ± x3), multiplies b1, b2, b3 by the twiddles
// broadcast in Z20…Z25 (w1r, w1i, w2r, w2i, w3r, w3i) and stores y0…y3 at
// DI (re) and SI (im) plus 0, S1, 2·S1 and S3 bytes.
#define RADIX4(S1, S3) \
	VMOVUPS (R8), Z0; \
	VMOVUPS (R8)(R10*1), Z1; \
	VMOVUPS (R8)(R10*2), Z2; \
	VMOVUPS (R8)(R11*1), Z3; \
	VMOVUPS (R9), Z4; \
	VMOVUPS (R9)(R10*1), Z5; \
	VMOVUPS (R9)(R10*2), Z6; \
	VMOVUPS (R9)(R11*1), Z7; \
	VADDPS Z2, Z0, Z8; \
	VSUBPS Z2, Z0, Z9; \
	VADDPS Z3, Z1, Z10; \
	VSUBPS Z3, Z1, Z11; \
	VADDPS Z6, Z4, Z12; \
	VSUBPS Z6, Z4, Z13; \
	VADDPS Z7, Z5, Z14; \
	VSUBPS Z7, Z5, Z15; \
	VADDPS Z10, Z8, Z0; \
	VADDPS Z14, Z12, Z1; \
	VSUBPS Z10, Z8, Z2; \
	VSUBPS Z14, Z12, Z3; \
	VADDPS Z15, Z9, Z4; \
	VSUBPS Z11, Z13, Z5; \
	VSUBPS Z15, Z9, Z6; \
	VADDPS Z11, Z13, Z7; \
	VMOVUPS Z0, (DI); \
	VMOVUPS Z1, (SI); \
	VMULPS Z21, Z5, Z8; \
	VFMSUB231PS Z20, Z4, Z8; \
	VMULPS Z20, Z5, Z9; \
	VFMADD231PS Z21, Z4, Z9; \
	VMOVUPS Z8, (DI)(S1*1); \
	VMOVUPS Z9, (SI)(S1*1); \
	VMULPS Z23, Z3, Z10; \
	VFMSUB231PS Z22, Z2, Z10; \
	VMULPS Z22, Z3, Z11; \
	VFMADD231PS Z23, Z2, Z11; \
	VMOVUPS Z10, (DI)(S1*2); \
	VMOVUPS Z11, (SI)(S1*2); \
	VMULPS Z25, Z7, Z12; \
	VFMSUB231PS Z24, Z6, Z12; \
	VMULPS Z24, Z7, Z13; \
	VFMADD231PS Z25, Z6, Z13; \
	VMOVUPS Z12, (DI)(S3*1); \
	VMOVUPS Z13, (SI)(S3*1)

// func radix4AVX512(yr, yi, xr, xi, tw *float32, s, m int)
//
// Registers: R8/R9 walk x (re/im) through k and q together (x for k+1
// starts where x for k ends); DI/SI walk y; R10 = s·m·4 bytes (x stride
// between the four inputs), R11 = 3·R10; R12 = s·4 bytes (y stride between
// the four outputs), R13 = 3·R12; DX walks tw; CX counts k, BX counts q.
TEXT ·radix4AVX512(SB), NOSPLIT, $0-56
	MOVQ yr+0(FP), DI
	MOVQ yi+8(FP), SI
	MOVQ xr+16(FP), R8
	MOVQ xi+24(FP), R9
	MOVQ tw+32(FP), DX
	MOVQ s+40(FP), R12
	MOVQ m+48(FP), CX
	MOVQ R12, R10
	IMULQ CX, R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	TESTQ CX, CX
	JZ   done4
loopk4:
	VBROADCASTSS 0(DX), Z20
	VBROADCASTSS 4(DX), Z21
	VBROADCASTSS 8(DX), Z22
	VBROADCASTSS 12(DX), Z23
	VBROADCASTSS 16(DX), Z24
	VBROADCASTSS 20(DX), Z25
	MOVQ R12, BX
	SHRQ $6, BX
loopq4:
	RADIX4(R12, R13)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ BX
	JNZ  loopq4
	ADDQ R13, DI
	ADDQ R13, SI
	ADDQ $24, DX
	DECQ CX
	JNZ  loopk4
done4:
	VZEROUPPER
	RET

// func radix2AVX512(yr, yi, xr, xi, tw *float32, s, m int)
//
// As radix4AVX512 with two inputs (x1 at R10 bytes past x0) and two
// outputs (y1 at R12 bytes past y0).
TEXT ·radix2AVX512(SB), NOSPLIT, $0-56
	MOVQ yr+0(FP), DI
	MOVQ yi+8(FP), SI
	MOVQ xr+16(FP), R8
	MOVQ xi+24(FP), R9
	MOVQ tw+32(FP), DX
	MOVQ s+40(FP), R12
	MOVQ m+48(FP), CX
	MOVQ R12, R10
	IMULQ CX, R10
	SHLQ $2, R10
	SHLQ $2, R12
	TESTQ CX, CX
	JZ   done2
loopk2:
	VBROADCASTSS 0(DX), Z20
	VBROADCASTSS 4(DX), Z21
	MOVQ R12, BX
	SHRQ $6, BX
loopq2:
	VMOVUPS (R8), Z0
	VMOVUPS (R8)(R10*1), Z1
	VMOVUPS (R9), Z2
	VMOVUPS (R9)(R10*1), Z3
	VADDPS Z1, Z0, Z4 // y0r
	VSUBPS Z1, Z0, Z5 // dr
	VADDPS Z3, Z2, Z6 // y0i
	VSUBPS Z3, Z2, Z7 // di
	VMOVUPS Z4, (DI)
	VMOVUPS Z6, (SI)
	VMULPS Z21, Z7, Z8      // di·wi
	VFMSUB231PS Z20, Z5, Z8 // dr·wr − di·wi
	VMULPS Z20, Z7, Z9      // di·wr
	VFMADD231PS Z21, Z5, Z9 // dr·wi + di·wr
	VMOVUPS Z8, (DI)(R12*1)
	VMOVUPS Z9, (SI)(R12*1)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ BX
	JNZ  loopq2
	ADDQ R12, DI
	ADDQ R12, SI
	ADDQ $8, DX
	DECQ CX
	JNZ  loopk2
done2:
	VZEROUPPER
	RET

// func realPackAVX512(or, oi, r0, i0, r1, i1, r2, i2, r3, i3 *float32, n int, c, s float32)
TEXT ·realPackAVX512(SB), NOSPLIT, $0-96
	MOVQ or+0(FP), DI
	MOVQ oi+8(FP), SI
	MOVQ r0+16(FP), R8
	MOVQ i0+24(FP), R9
	MOVQ r1+32(FP), R10
	MOVQ i1+40(FP), R11
	MOVQ r2+48(FP), R12
	MOVQ i2+56(FP), R13
	MOVQ r3+64(FP), AX
	MOVQ i3+72(FP), BX
	MOVQ n+80(FP), CX
	VBROADCASTSS c+88(FP), Z20
	VBROADCASTSS s+92(FP), Z21
	MOVL $0x3f000000, DX
	VPBROADCASTD DX, Z22 // 0.5
	SHRQ $4, CX
	JZ   donep
	XORQ DX, DX
loopp:
	VMOVUPS (R8)(DX*1), Z0
	VADDPS (R10)(DX*1), Z0, Z0 // r0 + r1
	VMULPS Z22, Z0, Z0         // xr
	VMOVUPS (R11)(DX*1), Z1
	VSUBPS (R9)(DX*1), Z1, Z1  // i1 − i0
	VMULPS Z22, Z1, Z1         // xi
	VMOVUPS (R12)(DX*1), Z2
	VADDPS (AX)(DX*1), Z2, Z2  // r2 + r3
	VMULPS Z22, Z2, Z2         // yr
	VMOVUPS (BX)(DX*1), Z3
	VSUBPS (R13)(DX*1), Z3, Z3 // i3 − i2
	VMULPS Z22, Z3, Z3         // yi
	VADDPS Z2, Z0, Z4          // ar
	VADDPS Z3, Z1, Z5          // ai
	VSUBPS Z2, Z0, Z6          // dr
	VSUBPS Z3, Z1, Z7          // di
	VMULPS Z21, Z7, Z8         // di·s
	VFMSUB231PS Z20, Z6, Z8    // bR = dr·c − di·s
	VMULPS Z20, Z7, Z9         // di·c
	VFMADD231PS Z21, Z6, Z9    // bI = dr·s + di·c
	VADDPS Z8, Z5, Z10         // ai + bR
	VSUBPS Z9, Z4, Z11         // ar − bI
	VMOVUPS Z10, (DI)(DX*1)
	VMOVUPS Z11, (SI)(DX*1)
	ADDQ $64, DX
	DECQ CX
	JNZ  loopp
donep:
	VZEROUPPER
	RET

// func twiddleAVX512(dr, di, sr, si, tw *float32, w, cnt int)
//
// For j < cnt: broadcast tw_j = (tw[2j], tw[2j+1]) and multiply the w
// (a multiple of 16) elements s[j·w…] by it into d[j·w…]. BX counts the
// vectors of one j, CX counts j.
TEXT ·twiddleAVX512(SB), NOSPLIT, $0-56
	MOVQ dr+0(FP), DI
	MOVQ di+8(FP), SI
	MOVQ sr+16(FP), R8
	MOVQ si+24(FP), R9
	MOVQ tw+32(FP), DX
	MOVQ w+40(FP), R12
	MOVQ cnt+48(FP), CX
	SHRQ $4, R12
	JZ   donet
	TESTQ CX, CX
	JZ   donet
loopjt:
	VBROADCASTSS 0(DX), Z20 // c
	VBROADCASTSS 4(DX), Z21 // s
	MOVQ R12, BX
loopqt:
	VMOVUPS (R8), Z0        // xr
	VMOVUPS (R9), Z1        // xi
	VMULPS Z21, Z1, Z2      // xi·s
	VFMSUB231PS Z20, Z0, Z2 // xr·c − xi·s
	VMULPS Z20, Z1, Z3      // xi·c
	VFMADD231PS Z21, Z0, Z3 // xr·s + xi·c
	VMOVUPS Z2, (DI)
	VMOVUPS Z3, (SI)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ BX
	JNZ  loopqt
	ADDQ $8, DX
	DECQ CX
	JNZ  loopjt
donet:
	VZEROUPPER
	RET

// func realPackRowsAVX512(or, oi, r0, r1, r2, r3, c, s *float32, dz, ld, cnt int)
//
// realPackAVX512 for cnt consecutive k and exactly 16 columns: rows r0 and
// r2 step forward and rows r1 and r3 backward by ld floats per k, the
// imaginary rows lie dz bytes past the real ones, c and s step by one
// float, and or and oi by 16 floats. Registers: R8–R11 the four real rows,
// AX = dz, DI/SI the outputs, DX/BX c and s, R12 = ld·4 bytes, R13 counts k.
TEXT ·realPackRowsAVX512(SB), NOSPLIT, $0-88
	MOVQ or+0(FP), DI
	MOVQ oi+8(FP), SI
	MOVQ r0+16(FP), R8
	MOVQ r1+24(FP), R9
	MOVQ r2+32(FP), R10
	MOVQ r3+40(FP), R11
	MOVQ c+48(FP), DX
	MOVQ s+56(FP), BX
	MOVQ dz+64(FP), AX
	MOVQ ld+72(FP), R12
	MOVQ cnt+80(FP), R13
	SHLQ $2, R12
	MOVL $0x3f000000, CX
	VPBROADCASTD CX, Z22 // 0.5
	TESTQ R13, R13
	JZ   donepr
looppr:
	VBROADCASTSS (DX), Z20
	VBROADCASTSS (BX), Z21
	VMOVUPS (R8), Z0
	VADDPS (R9), Z0, Z0        // r0 + r1
	VMULPS Z22, Z0, Z0         // xr
	VMOVUPS (R9)(AX*1), Z1
	VSUBPS (R8)(AX*1), Z1, Z1  // i1 − i0
	VMULPS Z22, Z1, Z1         // xi
	VMOVUPS (R10), Z2
	VADDPS (R11), Z2, Z2       // r2 + r3
	VMULPS Z22, Z2, Z2         // yr
	VMOVUPS (R11)(AX*1), Z3
	VSUBPS (R10)(AX*1), Z3, Z3 // i3 − i2
	VMULPS Z22, Z3, Z3         // yi
	VADDPS Z2, Z0, Z4          // ar
	VADDPS Z3, Z1, Z5          // ai
	VSUBPS Z2, Z0, Z6          // dr
	VSUBPS Z3, Z1, Z7          // di
	VMULPS Z21, Z7, Z8         // di·s
	VFMSUB231PS Z20, Z6, Z8    // bR = dr·c − di·s
	VMULPS Z20, Z7, Z9         // di·c
	VFMADD231PS Z21, Z6, Z9    // bI = dr·s + di·c
	VADDPS Z8, Z5, Z10         // ai + bR
	VSUBPS Z9, Z4, Z11         // ar − bI
	VMOVUPS Z10, (DI)
	VMOVUPS Z11, (SI)
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $4, DX
	ADDQ $4, BX
	ADDQ R12, R8
	SUBQ R12, R9
	ADDQ R12, R10
	SUBQ R12, R11
	DECQ R13
	JNZ  looppr
donepr:
	VZEROUPPER
	RET

// func copyRowsAVX512(dr, di, sr, si *float32, n, rows, ds, ss int)
//
// For r < rows: copy n floats (a multiple of 16) from sr + r·ss to
// dr + r·ds, and the same from si to di. R10/R11 = ds, ss in bytes, CX
// counts rows, BX the vectors of one row, DX the byte offset in a row.
TEXT ·copyRowsAVX512(SB), NOSPLIT, $0-64
	MOVQ dr+0(FP), DI
	MOVQ di+8(FP), SI
	MOVQ sr+16(FP), R8
	MOVQ si+24(FP), R9
	MOVQ n+32(FP), R12
	MOVQ rows+40(FP), CX
	MOVQ ds+48(FP), R10
	MOVQ ss+56(FP), R11
	SHLQ $2, R10
	SHLQ $2, R11
	SHRQ $4, R12
	JZ   donec
	TESTQ CX, CX
	JZ   donec
loopcr:
	MOVQ R12, BX
	XORQ DX, DX
loopcv:
	VMOVUPS (R8)(DX*1), Z0
	VMOVUPS (R9)(DX*1), Z1
	VMOVUPS Z0, (DI)(DX*1)
	VMOVUPS Z1, (SI)(DX*1)
	ADDQ $64, DX
	DECQ BX
	JNZ  loopcv
	ADDQ R10, DI
	ADDQ R10, SI
	ADDQ R11, R8
	ADDQ R11, R9
	DECQ CX
	JNZ  loopcr
donec:
	VZEROUPPER
	RET

// func realPackPairAVX512(or, or2, r0, r1, r2, r3, c, s *float32, dz, do, ld, cnt int)
//
// realPackRowsAVX512 that also writes the output of k' = M−k, which reads
// the same four rows: for k it writes (ai + bR, ar − bI) at or, for k' it
// writes (bR − ai, ar + bI) at or2 (see RealPlan.packPairs). or steps
// forward and or2 backward by 16 floats, the imaginary outputs lie do
// bytes past the real ones. Registers as realPackRowsAVX512, with DI/SI
// the two real outputs and CX = do.
TEXT ·realPackPairAVX512(SB), NOSPLIT, $0-96
	MOVQ or+0(FP), DI
	MOVQ or2+8(FP), SI
	MOVQ r0+16(FP), R8
	MOVQ r1+24(FP), R9
	MOVQ r2+32(FP), R10
	MOVQ r3+40(FP), R11
	MOVQ c+48(FP), DX
	MOVQ s+56(FP), BX
	MOVQ dz+64(FP), AX
	MOVQ ld+80(FP), R12
	MOVQ cnt+88(FP), R13
	SHLQ $2, R12
	MOVL $0x3f000000, CX
	VPBROADCASTD CX, Z22 // 0.5
	MOVQ do+72(FP), CX
	TESTQ R13, R13
	JZ   donepp
looppp:
	VBROADCASTSS (DX), Z20
	VBROADCASTSS (BX), Z21
	VMOVUPS (R8), Z0
	VADDPS (R9), Z0, Z0        // r0 + r1
	VMULPS Z22, Z0, Z0         // xr
	VMOVUPS (R9)(AX*1), Z1
	VSUBPS (R8)(AX*1), Z1, Z1  // i1 − i0
	VMULPS Z22, Z1, Z1         // xi
	VMOVUPS (R10), Z2
	VADDPS (R11), Z2, Z2       // r2 + r3
	VMULPS Z22, Z2, Z2         // yr
	VMOVUPS (R11)(AX*1), Z3
	VSUBPS (R10)(AX*1), Z3, Z3 // i3 − i2
	VMULPS Z22, Z3, Z3         // yi
	VADDPS Z2, Z0, Z4          // ar
	VADDPS Z3, Z1, Z5          // ai
	VSUBPS Z2, Z0, Z6          // dr
	VSUBPS Z3, Z1, Z7          // di
	VMULPS Z21, Z7, Z8         // di·s
	VFMSUB231PS Z20, Z6, Z8    // bR = dr·c − di·s
	VMULPS Z20, Z7, Z9         // di·c
	VFMADD231PS Z21, Z6, Z9    // bI = dr·s + di·c
	VADDPS Z8, Z5, Z10         // ai + bR
	VSUBPS Z9, Z4, Z11         // ar − bI
	VSUBPS Z5, Z8, Z12         // bR − ai
	VADDPS Z9, Z4, Z13         // ar + bI
	VMOVUPS Z10, (DI)
	VMOVUPS Z11, (DI)(CX*1)
	VMOVUPS Z12, (SI)
	VMOVUPS Z13, (SI)(CX*1)
	ADDQ $64, DI
	SUBQ $64, SI
	ADDQ $4, DX
	ADDQ $4, BX
	ADDQ R12, R8
	SUBQ R12, R9
	ADDQ R12, R10
	SUBQ R12, R11
	DECQ R13
	JNZ  looppp
donepp:
	VZEROUPPER
	RET

// func radix4SplitAVX512(yr, yi, xr, xi, tw *float32, m int)
//
// The butterflies and twiddles of radix4AVX512 with s = 16, but output r of
// k goes to quarter r (y + r·m·64 bytes + k·64) instead of y[16·(4k + r)]:
// R10 = m·64 bytes is both the input and the output quarter stride, so y
// may be x (each k reads its four vectors before it writes them).
TEXT ·radix4SplitAVX512(SB), NOSPLIT, $0-48
	MOVQ yr+0(FP), DI
	MOVQ yi+8(FP), SI
	MOVQ xr+16(FP), R8
	MOVQ xi+24(FP), R9
	MOVQ tw+32(FP), DX
	MOVQ m+40(FP), CX
	MOVQ CX, R10
	SHLQ $6, R10
	LEAQ (R10)(R10*2), R11
	TESTQ CX, CX
	JZ   donesp
loopsp:
	VBROADCASTSS 0(DX), Z20
	VBROADCASTSS 4(DX), Z21
	VBROADCASTSS 8(DX), Z22
	VBROADCASTSS 12(DX), Z23
	VBROADCASTSS 16(DX), Z24
	VBROADCASTSS 20(DX), Z25
	RADIX4(R10, R11)
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $64, SI
	ADDQ $24, DX
	DECQ CX
	JNZ  loopsp
donesp:
	VZEROUPPER
	RET

// func interleave4AVX512(dr, di, sr, si *float32, rows, ds, qs int)
//
// For k < rows and r < 4: dr[(4k+r)·ds + l] = sr[r·qs + 16k + l] and the
// same for di, si (l < 16): the four quarters' row k, then k+1, so the
// destination rows are written in order.
TEXT ·interleave4AVX512(SB), NOSPLIT, $0-56
	MOVQ dr+0(FP), DI
	MOVQ di+8(FP), SI
	MOVQ sr+16(FP), R8
	MOVQ si+24(FP), R9
	MOVQ rows+32(FP), CX
	MOVQ ds+40(FP), R10
	MOVQ qs+48(FP), R11
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ (R11)(R11*2), R12
	TESTQ CX, CX
	JZ   doneil
loopil:
	VMOVUPS (R8), Z0
	VMOVUPS (R8)(R11*1), Z1
	VMOVUPS (R8)(R11*2), Z2
	VMOVUPS (R8)(R12*1), Z3
	VMOVUPS (R9), Z4
	VMOVUPS (R9)(R11*1), Z5
	VMOVUPS (R9)(R11*2), Z6
	VMOVUPS (R9)(R12*1), Z7
	VMOVUPS Z0, (DI)
	VMOVUPS Z4, (SI)
	ADDQ R10, DI
	ADDQ R10, SI
	VMOVUPS Z1, (DI)
	VMOVUPS Z5, (SI)
	ADDQ R10, DI
	ADDQ R10, SI
	VMOVUPS Z2, (DI)
	VMOVUPS Z6, (SI)
	ADDQ R10, DI
	ADDQ R10, SI
	VMOVUPS Z3, (DI)
	VMOVUPS Z7, (SI)
	ADDQ R10, DI
	ADDQ R10, SI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ CX
	JNZ  loopil
doneil:
	VZEROUPPER
	RET
