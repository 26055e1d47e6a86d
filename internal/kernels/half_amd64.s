//go:build amd64 && !purego

#include "textflag.h"

// func roundHalfAVX512(x *float32, n int)
// Rounds n (a multiple of 16) values to half precision in place:
// VCVTPS2PH with immediate 0 (round to nearest even), then VCVTPH2PS.
TEXT ·roundHalfAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	JEQ done
loop:
	VMOVUPS (SI), Z0
	VCVTPS2PH $0, Z0, Y1
	VCVTPH2PS Y1, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	DECQ CX
	JNE loop
done:
	VZEROUPPER
	RET

// func toHalfAVX512(dst *uint16, src *float32, n int)
// Converts n (a multiple of 16) values to half bits, to nearest even.
TEXT ·toHalfAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JEQ tohalf_done
tohalf_loop:
	VMOVUPS (SI), Z0
	VCVTPS2PH $0, Z0, Y1
	VMOVDQU Y1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNE tohalf_loop
tohalf_done:
	VZEROUPPER
	RET

// func fromHalfAVX512(dst *float32, src *uint16, n int)
// Converts n (a multiple of 16) half values to float32.
TEXT ·fromHalfAVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JEQ fromhalf_done
fromhalf_loop:
	VCVTPH2PS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNE fromhalf_loop
fromhalf_done:
	VZEROUPPER
	RET
