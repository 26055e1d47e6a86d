//go:build amd64 && !purego

#include "textflag.h"

// AMX-BF16 micro-kernel of GemmBF16. Go's assembler has no AMX mnemonics:
// each tile instruction is spelled in bytes (VEX map 0F38, registers below
// r8 only, so R̄X̄B̄ = 111), with the instruction in the comment beside it.
//
// Tiles (configured by cfg: sixteen rows of 64 bytes each):
//   tmm0 tmm1   C rows  0…15, columns 0…15 and 16…31 (float32)
//   tmm2 tmm3   C rows 16…31, columns 0…15 and 16…31
//   tmm4 tmm5   A rows 0…15 and 16…31, 32 bf16 of K each
//   tmm6 tmm7   B 16 pairs of K by columns 0…15 and 16…31 (pair layout)

// func amxBF16(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, blocks int, tmp *float32, cfg *byte, mode, rows, halves int)
//
// For each of blocks blocks of 32 rows (A and C advance by 32 rows) and
// each of halves 32-column halves of a packed B panel (rows 256 bytes
// apart; half h starts 128 bytes in), so that a block's rows of A are
// read from memory once for both halves, it computes the 32×32 product of A's rows
// (lda bytes apart) by the half's columns, over steps·32 values of K; ldc
// is in float32. Mode 0: the product goes to tmp (32 rows of 32 float32),
// then C = alpha·tmp + beta·C (C not read when beta is 0) for the columns
// set in mask (bits 32h…32h+31 for half h) and the first rows rows of each
// block. Mode 1 (alpha 1, beta 0, all columns and rows): the tiles are
// stored straight into C, the same values as mode 0 writes.
TEXT ·amxBF16(SB), NOSPLIT, $0-112
	MOVQ cfg+80(FP), DI
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG (DI)
	VBROADCASTSS alpha+48(FP), Z30
	VBROADCASTSS beta+52(FP), Z31
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	MOVQ $256, BX
	MOVQ a+8(FP), R13
	MOVQ c+32(FP), R14
	MOVQ blocks+64(FP), R12

amx_block:
	XORQ R10, R10 // half

amx_half:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC0 // TILEZERO tmm0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xC8 // TILEZERO tmm1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD0 // TILEZERO tmm2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xD8 // TILEZERO tmm3
	MOVQ steps+0(FP), AX
	MOVQ lda+16(FP), DX
	MOVQ R13, SI
	MOVQ DX, CX
	SHLQ $4, CX
	ADDQ SI, CX
	MOVQ R10, DI
	SHLQ $7, DI
	ADDQ b+24(FP), DI

amx_k:
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x24; BYTE $0x16              // TILELOADD tmm4, (SI)(DX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x34; BYTE $0x1F              // TILELOADD tmm6, (DI)(BX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x7C; BYTE $0x1F; BYTE $0x40 // TILELOADD tmm7, 64(DI)(BX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xC4                          // TDPBF16PS tmm0, tmm4, tmm6
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x2C; BYTE $0x11              // TILELOADD tmm5, (CX)(DX*1)
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xCC                          // TDPBF16PS tmm1, tmm4, tmm7
	BYTE $0xC4; BYTE $0xE2; BYTE $0x4A; BYTE $0x5C; BYTE $0xD5                          // TDPBF16PS tmm2, tmm5, tmm6
	BYTE $0xC4; BYTE $0xE2; BYTE $0x42; BYTE $0x5C; BYTE $0xDD                          // TDPBF16PS tmm3, tmm5, tmm7
	ADDQ $64, SI
	ADDQ $64, CX
	ADDQ $4096, DI
	DECQ AX
	JNZ amx_k

	// R8: this block's first row of C, from this half's first column.
	MOVQ R10, R8
	SHLQ $7, R8
	ADDQ R14, R8
	MOVQ mode+88(FP), AX
	TESTQ AX, AX
	JEQ amx_epilogue
	MOVQ R8, SI
	MOVQ R9, DX
	MOVQ DX, CX
	SHLQ $4, CX
	ADDQ SI, CX
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x16              // TILESTORED (SI)(DX*1), tmm0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x4C; BYTE $0x16; BYTE $0x40 // TILESTORED 64(SI)(DX*1), tmm1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x11              // TILESTORED (CX)(DX*1), tmm2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x5C; BYTE $0x11; BYTE $0x40 // TILESTORED 64(CX)(DX*1), tmm3
	JMP amx_next_half

amx_epilogue:
	MOVQ mask+56(FP), AX
	MOVQ R10, CX
	SHLQ $5, CX
	SHRQ CX, AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	MOVQ tmp+72(FP), SI
	MOVQ $128, DX
	LEAQ 2048(SI), CX
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x04; BYTE $0x16              // TILESTORED (SI)(DX*1), tmm0
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x4C; BYTE $0x16; BYTE $0x40 // TILESTORED 64(SI)(DX*1), tmm1
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x14; BYTE $0x11              // TILESTORED (CX)(DX*1), tmm2
	BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x5C; BYTE $0x11; BYTE $0x40 // TILESTORED 64(CX)(DX*1), tmm3

	// C = alpha·tmp + beta·C, row by row.
	MOVQ rows+96(FP), R11
	VXORPS X0, X0, X0
	VUCOMISS beta+52(FP), X0
	JNE amx_rows_beta
	JP amx_rows_beta

amx_rows:
	VMULPS (SI), Z30, Z0
	VMULPS 64(SI), Z30, Z1
	VMOVUPS Z0, K1, (R8)
	VMOVUPS Z1, K2, 64(R8)
	ADDQ $128, SI
	ADDQ R9, R8
	DECQ R11
	JNZ amx_rows
	JMP amx_next_half

amx_rows_beta:
	VMULPS (SI), Z30, Z0
	VMULPS 64(SI), Z30, Z1
	VMOVUPS.Z (R8), K1, Z2
	VMOVUPS.Z 64(R8), K2, Z3
	VFMADD231PS Z31, Z2, Z0
	VFMADD231PS Z31, Z3, Z1
	VMOVUPS Z0, K1, (R8)
	VMOVUPS Z1, K2, 64(R8)
	ADDQ $128, SI
	ADDQ R9, R8
	DECQ R11
	JNZ amx_rows_beta

amx_next_half:
	INCQ R10
	CMPQ R10, halves+104(FP)
	JLT amx_half
	MOVQ lda+16(FP), DX
	SHLQ $5, DX
	ADDQ DX, R13
	MOVQ R9, DX
	SHLQ $5, DX
	ADDQ DX, R14
	DECQ R12
	JNZ amx_block

	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 // TILERELEASE
	VZEROUPPER
	RET

// func amxRowsFMA(steps int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha, beta float32, mask uint64, rows int)
//
// amxBF16's products for a few rows, on AVX-512 FMAs, bit for bit: for
// each of rows rows of A (lda bytes apart) and the 64 columns of a packed
// B panel (rows 256 bytes apart), over steps·32 values of K. Each step of
// 16 pairs runs as TDPBF16PS does: the products of the pairs' first values
// summed in order from zero (e), those of their second values likewise
// (o), each an FMA (the product of two bf16 is exact in float32), then
// acc += e + o; with MXCSR's FTZ and DAZ set meanwhile, as the tiles flush
// denormals. Then, MXCSR restored, C = alpha·acc + beta·C (C not read when
// beta is 0) for the columns set in mask, as amxBF16's mode 0 writes.
//
// Registers: Z0–Z3 acc, Z4–Z7 e, Z8–Z11 o (16 columns each), Z12 and Z13
// the A pair's two values widened, Z14–Z16 a row of B's pairs and its two
// halves widened, Z29 the high-half mask, Z30 alpha, Z31 beta, K1–K4 the
// column masks.
TEXT ·amxRowsFMA(SB), NOSPLIT, $8-72
	STMXCSR 0(SP)
	MOVL 0(SP), AX
	ORL $0x8040, AX // FTZ, DAZ
	MOVL AX, 4(SP)
	VBROADCASTSS alpha+48(FP), Z30
	VBROADCASTSS beta+52(FP), Z31
	MOVL $0xFFFF0000, AX
	VPBROADCASTD AX, Z29
	MOVQ mask+56(FP), AX
	KMOVW AX, K1
	SHRQ $16, AX
	KMOVW AX, K2
	SHRQ $16, AX
	KMOVW AX, K3
	SHRQ $16, AX
	KMOVW AX, K4
	MOVQ a+8(FP), R13
	MOVQ lda+16(FP), DX
	MOVQ c+32(FP), R14
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	MOVQ rows+64(FP), R12

amxfma_row:
	LDMXCSR 4(SP)
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R13, SI
	MOVQ b+24(FP), DI
	MOVQ steps+0(FP), AX

amxfma_step:
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	MOVQ $16, CX

amxfma_pair:
	VPBROADCASTD (SI), Z13
	VPSLLD $16, Z13, Z12
	VPANDD Z29, Z13, Z13
	VMOVDQU32 (DI), Z14
	VPSLLD $16, Z14, Z15
	VPANDD Z29, Z14, Z16
	VFMADD231PS Z15, Z12, Z4
	VFMADD231PS Z16, Z13, Z8
	VMOVDQU32 64(DI), Z14
	VPSLLD $16, Z14, Z15
	VPANDD Z29, Z14, Z16
	VFMADD231PS Z15, Z12, Z5
	VFMADD231PS Z16, Z13, Z9
	VMOVDQU32 128(DI), Z14
	VPSLLD $16, Z14, Z15
	VPANDD Z29, Z14, Z16
	VFMADD231PS Z15, Z12, Z6
	VFMADD231PS Z16, Z13, Z10
	VMOVDQU32 192(DI), Z14
	VPSLLD $16, Z14, Z15
	VPANDD Z29, Z14, Z16
	VFMADD231PS Z15, Z12, Z7
	VFMADD231PS Z16, Z13, Z11
	ADDQ $4, SI
	ADDQ $256, DI
	DECQ CX
	JNZ amxfma_pair
	VADDPS Z8, Z4, Z4
	VADDPS Z9, Z5, Z5
	VADDPS Z10, Z6, Z6
	VADDPS Z11, Z7, Z7
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	DECQ AX
	JNZ amxfma_step

	LDMXCSR 0(SP)
	VMULPS Z0, Z30, Z0
	VMULPS Z1, Z30, Z1
	VMULPS Z2, Z30, Z2
	VMULPS Z3, Z30, Z3
	VXORPS X4, X4, X4
	VUCOMISS beta+52(FP), X4
	JNE amxfma_beta
	JP amxfma_beta
	JMP amxfma_store

amxfma_beta:
	VMOVUPS.Z (R14), K1, Z4
	VMOVUPS.Z 64(R14), K2, Z5
	VMOVUPS.Z 128(R14), K3, Z6
	VMOVUPS.Z 192(R14), K4, Z7
	VFMADD231PS Z31, Z4, Z0
	VFMADD231PS Z31, Z5, Z1
	VFMADD231PS Z31, Z6, Z2
	VFMADD231PS Z31, Z7, Z3

amxfma_store:
	VMOVUPS Z0, K1, (R14)
	VMOVUPS Z1, K2, 64(R14)
	VMOVUPS Z2, K3, 128(R14)
	VMOVUPS Z3, K4, 192(R14)
	ADDQ DX, R13
	ADDQ R9, R14
	DECQ R12
	JNZ amxfma_row
	VZEROUPPER
	RET
