//go:build amd64

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
