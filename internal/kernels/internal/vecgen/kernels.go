package main

// kernels are the assembly templates. V<n> are vector registers, {S} the
// name suffix, {SH} log2(lanes), {B}…{B4} 1…4 vectors in bytes, %name% a
// vecTab constant; "@EXP X T N" expands to X = exp(X) (T and N scratch, and
// K1 on AVX-512 or V15 on AVX2, which no template uses), "@REDUCE OP A T" folds
// A into XA, "@EXPSUB", "@MAX" and "@SUBMUL" to expSubLoop, maxLoop and
// subMulLoop.
var kernels = []string{`
// func expVec{S}(dst, src *float32, n int)
TEXT ·expVec{S}(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ ${SH}, CX
	JZ   done
loop2:
	CMPQ CX, $2
	JLT  loop1
	VMOVUPS (SI), V0
	VMOVUPS {B}(SI), V4
	@EXP V0 V1 V2
	@EXP V4 V5 V6
	VMOVUPS V0, (DI)
	VMOVUPS V4, {B}(DI)
	ADDQ $({B2}), SI
	ADDQ $({B2}), DI
	SUBQ $2, CX
	JMP  loop2
loop1:
	TESTQ CX, CX
	JZ    done
	VMOVUPS (SI), V0
	@EXP V0 V1 V2
	VMOVUPS V0, (DI)
done:
	VZEROUPPER
	RET`, `
// func expSubVec{S}(dst, src *float32, n int, m float32, tail *float32) float32
TEXT ·expSubVec{S}(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS m+24(FP), V8
	VXORPS V9, V9, V9
	VXORPS V10, V10, V10
	SHRQ ${SH}, CX
	MOVQ CX, DX
	JZ   last
	@EXPSUB
	// A non-nil tail is one more vector (padded by the caller with lanes
	// whose exp is 0), summed into the accumulator of its index (V9 even,
	// V10 odd) like the others: appending such lanes changes no lane sum.
	MOVQ tail+32(FP), SI
	TESTQ SI, SI
	JZ    done
	VMOVUPS (SI), V0
	VSUBPS V8, V0, V0
	@EXP V0 V1 V2
	VMOVUPS V0, (SI)
	TESTQ $1, DX
	JNZ   odd
	VADDPS V0, V9, V9
	JMP   done
odd:
	VADDPS V0, V10, V10
done:
	VADDPS V10, V9, V9
	@REDUCE VADDPS V9 V1
	VMOVSS X9, ret+40(FP)
	VZEROUPPER
	RET`, `
// func maxVec{S}(x *float32, n int) float32
TEXT ·maxVec{S}(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS %neginf%, V0
	VMOVUPS %neginf%, V1
	SHRQ ${SH}, CX
	JZ   last
	@MAX
	VMAXPS V1, V0, V0
	@REDUCE VMAXPS V0 V2
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET`, `
// func sumVec{S}(x *float32, n int) float32
TEXT ·sumVec{S}(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPS V0, V0, V0
	VXORPS V1, V1, V1
	VXORPS V2, V2, V2
	VXORPS V3, V3, V3
	SHRQ ${SH}, CX
loop4:
	CMPQ CX, $4
	JLT  loop1
	VADDPS (SI), V0, V0
	VADDPS {B}(SI), V1, V1
	VADDPS {B2}(SI), V2, V2
	VADDPS {B3}(SI), V3, V3
	ADDQ $({B4}), SI
	SUBQ $4, CX
	JMP  loop4
loop1:
	TESTQ CX, CX
	JZ    done
	VADDPS (SI), V0, V0
	ADDQ $({B}), SI
	DECQ CX
	JMP  loop1
done:
	VADDPS V1, V0, V0
	VADDPS V3, V2, V2
	VADDPS V2, V0, V0
	@REDUCE VADDPS V0 V4
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET`, `
// func dotVec{S}(a, b *float32, n int) float32
TEXT ·dotVec{S}(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS V0, V0, V0
	VXORPS V1, V1, V1
	VXORPS V2, V2, V2
	VXORPS V3, V3, V3
	SHRQ ${SH}, CX
loop4:
	CMPQ CX, $4
	JLT  loop1
	VMOVUPS (SI), V4
	VMOVUPS {B}(SI), V5
	VMOVUPS {B2}(SI), V6
	VMOVUPS {B3}(SI), V7
	VFMADD231PS (DI), V4, V0
	VFMADD231PS {B}(DI), V5, V1
	VFMADD231PS {B2}(DI), V6, V2
	VFMADD231PS {B3}(DI), V7, V3
	ADDQ $({B4}), SI
	ADDQ $({B4}), DI
	SUBQ $4, CX
	JMP  loop4
loop1:
	TESTQ CX, CX
	JZ    done
	VMOVUPS (SI), V4
	VFMADD231PS (DI), V4, V0
	ADDQ $({B}), SI
	ADDQ $({B}), DI
	DECQ CX
	JMP  loop1
done:
	VADDPS V1, V0, V0
	VADDPS V3, V2, V2
	VADDPS V2, V0, V0
	@REDUCE VADDPS V0 V4
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET`, `
// func axpyVec{S}(dst, x *float32, n int, a float32)
TEXT ·axpyVec{S}(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), V4
	SHRQ ${SH}, CX
loop2:
	CMPQ CX, $2
	JLT  loop1
	VMOVUPS (DI), V0
	VMOVUPS {B}(DI), V1
	VFMADD231PS (SI), V4, V0
	VFMADD231PS {B}(SI), V4, V1
	VMOVUPS V0, (DI)
	VMOVUPS V1, {B}(DI)
	ADDQ $({B2}), SI
	ADDQ $({B2}), DI
	SUBQ $2, CX
	JMP  loop2
loop1:
	TESTQ CX, CX
	JZ    done
	VMOVUPS (DI), V0
	VFMADD231PS (SI), V4, V0
	VMOVUPS V0, (DI)
done:
	VZEROUPPER
	RET`, `
// func scaleVec{S}(dst *float32, n int, s float32)
TEXT ·scaleVec{S}(SB), NOSPLIT, $0-20
	MOVQ dst+0(FP), DI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), V4
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMULPS (DI), V4, V0
	VMOVUPS V0, (DI)
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func expSubRowsVec{S}(x *float32, n, rows int, m *float32, ms int, sums *float32)
// Each of rows rows of n elements, x_r = exp(x_r − m[r·ms]) in place, as
// expSubVec does it; with sums non-nil, sums[r] = Σ x_r (expSubVec's sum).
TEXT ·expSubRowsVec{S}(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
	MOVQ rows+16(FP), R8
	MOVQ m+24(FP), R9
	MOVQ ms+32(FP), R10
	MOVQ sums+40(FP), R11
	SHRQ ${SH}, BX
	SHLQ $2, R10
	TESTQ R8, R8
	JZ   done
row:
	VBROADCASTSS (R9), V8
	VXORPS V9, V9, V9
	VXORPS V10, V10, V10
	MOVQ BX, CX
	MOVQ SI, DI
	@EXPSUB
	TESTQ R11, R11
	JZ    next
	VADDPS V10, V9, V9
	@REDUCE VADDPS V9 V1
	VMOVSS X9, (R11)
	ADDQ $4, R11
next:
	ADDQ R10, R9
	DECQ R8
	JNZ  row
done:
	VZEROUPPER
	RET`, `
// func maxRowsVec{S}(x *float32, n, rows int, out *float32)
// out[r] = the maximum of row r of rows rows of n elements, as maxVec
// (NaNs ignored). n > 0.
TEXT ·maxRowsVec{S}(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), BX
	MOVQ rows+16(FP), R8
	MOVQ out+24(FP), DI
	SHRQ ${SH}, BX
	TESTQ R8, R8
	JZ   done
row:
	VMOVUPS %neginf%, V0
	VMOVUPS %neginf%, V1
	MOVQ BX, CX
	@MAX
	VMAXPS V1, V0, V0
	@REDUCE VMAXPS V0 V2
	VMOVSS X0, (DI)
	ADDQ $4, DI
	DECQ R8
	JNZ  row
done:
	VZEROUPPER
	RET`, `
// func subMulRowsVec{S}(dst, p *float32, n, rows int, d *float32, ds int)
// Each of rows rows of n elements, dst_r = p_r·(dst_r − d[r·ds]), as
// subMulVec. n > 0.
TEXT ·subMulRowsVec{S}(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), BX
	MOVQ rows+24(FP), R8
	MOVQ d+32(FP), R9
	MOVQ ds+40(FP), R10
	SHRQ ${SH}, BX
	SHLQ $2, R10
	TESTQ R8, R8
	JZ   done
row:
	VBROADCASTSS (R9), V4
	MOVQ BX, CX
	@SUBMUL
	ADDQ R10, R9
	DECQ R8
	JNZ  row
done:
	VZEROUPPER
	RET`, `
// func scaleRowsVec{S}(x *float32, n, rows, ld int, s *float32)
// Each of rows rows of n elements, ld apart, x_r = x_r·s[r]; a row whose
// factor is 1 is not touched. n > 0.
TEXT ·scaleRowsVec{S}(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), DI
	MOVQ n+8(FP), BX
	MOVQ rows+16(FP), R8
	MOVQ ld+24(FP), R10
	MOVQ s+32(FP), R9
	SHRQ ${SH}, BX
	SHLQ $2, R10
	TESTQ R8, R8
	JZ   done
row:
	CMPL (R9), $0x3f800000
	JEQ  next
	VBROADCASTSS (R9), V4
	MOVQ DI, SI
	MOVQ BX, CX
loop:
	VMULPS (SI), V4, V0
	VMOVUPS V0, (SI)
	ADDQ $({B}), SI
	DECQ CX
	JNZ  loop
next:
	ADDQ R10, DI
	ADDQ $4, R9
	DECQ R8
	JNZ  row
done:
	VZEROUPPER
	RET`, `
// func subMulVec{S}(dst, p *float32, n int, d float32)
// dst = p·(dst − d): attention's dS = P ⊙ (dP − D).
TEXT ·subMulVec{S}(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS d+24(FP), V4
	SHRQ ${SH}, CX
	JZ   done
	@SUBMUL
done:
	VZEROUPPER
	RET`, `
// func addVec{S}(dst, a, b *float32, n int)
TEXT ·addVec{S}(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VADDPS (DX), V0, V0
	VMOVUPS V0, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func addToVec{S}(dst, a *float32, n int)
TEXT ·addToVec{S}(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (DI), V0
	VADDPS (SI), V0, V0
	VMOVUPS V0, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func geluVec{S}(dst, src *float32, n int)
// t = x·(A + B·x²) = −2u; GELU = x/(1+eᵗ), which is x/Inf = −0 when eᵗ
// overflows.
TEXT ·geluVec{S}(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VMULPS V0, V0, V1
	VMOVUPS %geluB%, V2
	VFMADD213PS %geluA%, V1, V2
	VMULPS V0, V2, V2
	@EXP V2 V3 V4
	VADDPS %one%, V2, V2
	VDIVPS V2, V0, V0
	VMOVUPS V0, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func geluBackVec{S}(dinp, inp, dout *float32, n int)
// x is clamped to [XMin, XMax] first (beyond it GELU' is 0 or 1 in float32);
// s = 1/(1+eᵗ); dinp = dout·(s + eᵗs²·x·(K1 + K2·x²)) (dinp may be dout).
TEXT ·geluBackVec{S}(SB), NOSPLIT, $0-32
	MOVQ dinp+0(FP), DI
	MOVQ inp+8(FP), SI
	MOVQ dout+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VMOVUPS %geluXMin%, V1
	VMAXPS V0, V1, V0
	VMOVUPS %geluXMax%, V1
	VMINPS V0, V1, V0
	VMULPS V0, V0, V1
	VMOVUPS %geluB%, V2
	VFMADD213PS %geluA%, V1, V2
	VMULPS V0, V2, V2
	VMOVUPS %geluTMax%, V3
	VMINPS V2, V3, V2
	@EXP V2 V3 V4
	VADDPS %one%, V2, V3
	VMOVUPS %one%, V4
	VDIVPS V3, V4, V4
	VMULPS V4, V2, V5
	VMULPS V4, V5, V5
	VMOVUPS %geluK2%, V6
	VFMADD213PS %geluK1%, V1, V6
	VMULPS V0, V6, V6
	VFMADD231PS V6, V5, V4
	VMULPS (DX), V4, V7
	VMOVUPS V7, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func sumSqDevVec{S}(x *float32, n int, m float32) float32
TEXT ·sumSqDevVec{S}(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), V4
	VXORPS V0, V0, V0
	VXORPS V1, V1, V1
	SHRQ ${SH}, CX
loop2:
	CMPQ CX, $2
	JLT  loop1
	VMOVUPS (SI), V2
	VMOVUPS {B}(SI), V3
	VSUBPS V4, V2, V2
	VSUBPS V4, V3, V3
	VFMADD231PS V2, V2, V0
	VFMADD231PS V3, V3, V1
	ADDQ $({B2}), SI
	SUBQ $2, CX
	JMP  loop2
loop1:
	TESTQ CX, CX
	JZ    done
	VMOVUPS (SI), V2
	VSUBPS V4, V2, V2
	VFMADD231PS V2, V2, V0
done:
	VADDPS V1, V0, V0
	@REDUCE VADDPS V0 V2
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET`, `
// func lnAffineVec{S}(out, x, w, b *float32, n int, m, s float32)
// out = (x−m)·s·w + b
TEXT ·lnAffineVec{S}(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), BX
	MOVQ n+32(FP), CX
	VBROADCASTSS m+40(FP), V4
	VBROADCASTSS s+44(FP), V5
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VSUBPS V4, V0, V0
	VMULPS V5, V0, V0
	VMULPS (DX), V0, V0
	VADDPS (BX), V0, V0
	VMOVUPS V0, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), BX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func lnBackDotsVec{S}(dy, x, w *float32, n int, m, s float32) (sd, sdx float32)
// sd = Σ dy·w, sdx = Σ dy·w·(x−m)·s
TEXT ·lnBackDotsVec{S}(SB), NOSPLIT, $0-48
	MOVQ dy+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ w+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS m+32(FP), V6
	VBROADCASTSS s+36(FP), V7
	VXORPS V4, V4, V4
	VXORPS V5, V5, V5
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VMULPS (DX), V0, V0
	VMOVUPS (DI), V1
	VSUBPS V6, V1, V1
	VMULPS V7, V1, V1
	VADDPS V0, V4, V4
	VFMADD231PS V1, V0, V5
	ADDQ $({B}), SI
	ADDQ $({B}), DI
	ADDQ $({B}), DX
	DECQ CX
	JNZ  loop
done:
	@REDUCE VADDPS V4 V0
	@REDUCE VADDPS V5 V1
	VMOVSS X4, sd+40(FP)
	VMOVSS X5, sdx+44(FP)
	VZEROUPPER
	RET`, `
// func lnBackDxVec{S}(dx, dy, x, w *float32, n int, m, s, sd, sdx float32)
// dx += s·(dy·w − sd − (x−m)·s·sdx)
TEXT ·lnBackDxVec{S}(SB), NOSPLIT, $0-56
	MOVQ dx+0(FP), DI
	MOVQ dy+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ w+24(FP), BX
	MOVQ n+32(FP), CX
	VBROADCASTSS m+40(FP), V6
	VBROADCASTSS s+44(FP), V7
	VBROADCASTSS sd+48(FP), V8
	VBROADCASTSS sdx+52(FP), V9
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VMULPS (BX), V0, V0
	VSUBPS V8, V0, V0
	VMOVUPS (DX), V1
	VSUBPS V6, V1, V1
	VMULPS V7, V1, V1
	VFNMADD231PS V9, V1, V0
	VMOVUPS (DI), V2
	VFMADD231PS V7, V0, V2
	VMOVUPS V2, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), BX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func lnBackWVec{S}(dw, db, dy, x *float32, n int, m, s float32)
// db += dy; dw += dy·(x−m)·s
TEXT ·lnBackWVec{S}(SB), NOSPLIT, $0-48
	MOVQ dw+0(FP), DI
	MOVQ db+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ x+24(FP), BX
	MOVQ n+32(FP), CX
	VBROADCASTSS m+40(FP), V6
	VBROADCASTSS s+44(FP), V7
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (DX), V0
	VMOVUPS (BX), V1
	VSUBPS V6, V1, V1
	VMULPS V7, V1, V1
	VADDPS (SI), V0, V2
	VMOVUPS V2, (SI)
	VMOVUPS (DI), V3
	VFMADD231PS V1, V0, V3
	VMOVUPS V3, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), BX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`, `
// func adamWVec{S}(p, grad, m, v *float32, n int, b1, a1, b2, a2, ib1, ib2, lr, eps, wd float32)
// m = b1·m + a1·g; v = b2·v + a2·g²; p −= lr·(m·ib1/(√(v·ib2)+eps) + wd·p)
TEXT ·adamWVec{S}(SB), NOSPLIT, $0-76
	MOVQ p+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), DX
	MOVQ v+24(FP), BX
	MOVQ n+32(FP), CX
	VBROADCASTSS b1+40(FP), V7
	VBROADCASTSS a1+44(FP), V8
	VBROADCASTSS b2+48(FP), V9
	VBROADCASTSS a2+52(FP), V10
	VBROADCASTSS ib1+56(FP), V11
	VBROADCASTSS ib2+60(FP), V12
	VBROADCASTSS lr+64(FP), V13
	VBROADCASTSS eps+68(FP), V14
	VBROADCASTSS wd+72(FP), V15
	SHRQ ${SH}, CX
	JZ   done
loop:
	VMOVUPS (SI), V0
	VMULPS (DX), V7, V1
	VFMADD231PS V8, V0, V1
	VMOVUPS V1, (DX)
	VMULPS V0, V0, V3
	VMULPS (BX), V9, V2
	VFMADD231PS V10, V3, V2
	VMOVUPS V2, (BX)
	VMULPS V12, V2, V3
	VSQRTPS V3, V3
	VADDPS V14, V3, V3
	VMULPS V11, V1, V4
	VDIVPS V3, V4, V4
	VMOVUPS (DI), V5
	VFMADD231PS V15, V5, V4
	VFNMADD231PS V13, V4, V5
	VMOVUPS V5, (DI)
	ADDQ $({B}), SI
	ADDQ $({B}), DX
	ADDQ $({B}), BX
	ADDQ $({B}), DI
	DECQ CX
	JNZ  loop
done:
	VZEROUPPER
	RET`,
}
