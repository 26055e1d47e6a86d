//go:build amd64 && !purego

#include "textflag.h"

// iota16<> holds the int32 lane numbers 0..15.
DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// func packBTGather512(dst *float32, pw int, src *float32, ldb int, kc int, groups int)
//
// For g < groups and q < kc: dst[q·pw + 16g + i] = src[(16g+i)·ldb + q],
// i < 16: one VGATHERDPS (16 rows of B, one column) per packed vector.
TEXT ·packBTGather512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ pw+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ ldb+24(FP), R9
	MOVQ groups+40(FP), DX
	VPBROADCASTD R9, Z30
	VMOVDQU32 iota16<>(SB), Z29
	VPMULLD Z29, Z30, Z31 // lane i: i·ldb
	SHLQ $6, R9           // 16 rows of B, in bytes
	TESTQ DX, DX
	JE done

group:
	MOVQ kc+32(FP), CX
	MOVQ SI, AX
	MOVQ DI, BX
	TESTQ CX, CX
	JE next

col:
	KXNORW K1, K1, K1
	VGATHERDPS (AX)(Z31*4), K1, Z0
	VMOVUPS Z0, (BX)
	ADDQ $4, AX
	ADDQ R8, BX
	DECQ CX
	JNE col

next:
	ADDQ R9, SI
	ADDQ $64, DI
	DECQ DX
	JNE group

done:
	VZEROUPPER
	RET

// func packATPanels6(dst *float32, src *float32, lda int, kc int, groups int, pstride int)
//
// For q < kc and g < groups: dst[g·pstride + 6q + i] = src[q·lda + 6g + i],
// i < 6 (see packATPanels).
TEXT ·packATPanels6(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	MOVQ kc+24(FP), CX
	MOVQ groups+32(FP), DX
	MOVQ pstride+40(FP), R9
	SHLQ $2, R9
	TESTQ CX, CX
	JE pdone
	TESTQ DX, DX
	JE pdone

prow:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ DX, R10

pgroup:
	MOVUPS (AX), X0
	MOVQ 16(AX), X1
	MOVUPS X0, (BX)
	MOVQ X1, 16(BX)
	ADDQ $24, AX
	ADDQ R9, BX
	DECQ R10
	JNE pgroup
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JNE prow

pdone:
	RET

// func packBTTrans8(dst *float32, pw int, src *float32, ldb int, kc int, groups int)
//
// For g < groups and q < kc (kc a positive multiple of 8, groups ≥ 1):
// dst[q·pw + 8g + i] = src[(8g+i)·ldb + q], i < 8. Each 8×8 block of B
// (8 rows, 8 consecutive columns) is read as 8 vectors, transposed in
// registers (unpack, shuffle, lane permute) and written as 8 rows of dst.
TEXT ·packBTTrans8(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ pw+8(FP), R8
	SHLQ $2, R8 // dst row stride in bytes
	MOVQ src+16(FP), SI
	MOVQ ldb+24(FP), R9
	SHLQ $2, R9 // B row stride in bytes
	MOVQ kc+32(FP), R10
	MOVQ groups+40(FP), DX

group:
	MOVQ SI, AX  // B rows 8g..8g+7, column q
	MOVQ DI, BX  // dst row q, column 8g
	MOVQ R10, CX

block:
	MOVQ    AX, R11
	VMOVUPS (R11), Y0
	VMOVUPS (R11)(R9*1), Y1
	LEAQ    (R11)(R9*2), R11
	VMOVUPS (R11), Y2
	VMOVUPS (R11)(R9*1), Y3
	LEAQ    (R11)(R9*2), R11
	VMOVUPS (R11), Y4
	VMOVUPS (R11)(R9*1), Y5
	LEAQ    (R11)(R9*2), R11
	VMOVUPS (R11), Y6
	VMOVUPS (R11)(R9*1), Y7

	// Per 128-bit lane: pairs of rows interleaved.
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	// Four rows of columns c and c+4 per register.
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	// Columns 0..7 of the block, all eight rows each.
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	MOVQ    BX, R12
	VMOVUPS Y8, (R12)
	VMOVUPS Y9, (R12)(R8*1)
	LEAQ    (R12)(R8*2), R12
	VMOVUPS Y10, (R12)
	VMOVUPS Y11, (R12)(R8*1)
	LEAQ    (R12)(R8*2), R12
	VMOVUPS Y12, (R12)
	VMOVUPS Y13, (R12)(R8*1)
	LEAQ    (R12)(R8*2), R12
	VMOVUPS Y14, (R12)
	VMOVUPS Y15, (R12)(R8*1)

	ADDQ $32, AX         // the next 8 columns of B
	LEAQ (BX)(R8*8), BX  // the next 8 rows of dst
	SUBQ $8, CX
	JNZ  block

	LEAQ (SI)(R9*8), SI // the next 8 rows of B
	ADDQ $32, DI        // the next 8 columns of dst
	DECQ DX
	JNZ  group
	VZEROUPPER
	RET
