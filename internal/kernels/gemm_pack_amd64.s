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
