package kernels

import "math"

// The float32 exp used by Exp, ExpSub, SoftmaxRows and the GELU kernels. One
// algorithm runs on every path (AVX-512, AVX2+FMA and the pure-Go expGo):
//
//  1. x below expLo gives 0; clamp x to at most expHi; NaN passes through.
//  2. n = round(x·log2e) with the 1.5·2²³ shifter trick; n is read from the
//     shifter sum's mantissa bits.
//  3. r = x − n·ln2 with a Cody–Waite split ln2 = ln2Hi + ln2Lo; ln2Hi has
//     15 significant bits, so n·ln2Hi is exact for |n| ≤ 512 and
//     |r| ≤ ln2/2 (plus an ulp).
//  4. exp(r) ≈ 1 + r·(1 + r·q(r)), q of degree 4: a minimax fit of
//     (eʳ−1−r)/r² for relative error on [−ln2/2, ln2/2]. The fit alone is
//     good to 3.7e-9 with float32 coefficients; float32 rounding dominates.
//  5. 2ⁿ is built in two halves from exponent bits, 2^(n>>1)·2^(n−n>>1), so
//     results overflow to +Inf exactly as a correctly rounded product
//     would. AVX-512 multiplies by 2ⁿ in one VSCALEFPS, which rounds the
//     same product once: the AVX2 and AVX-512 results agree bit for bit
//     (TestExpPathsAgree).
//
// Results are never subnormal: x below expLo, the smallest float32 whose
// exp is at least 2⁻¹²⁶, gives 0. The assembly computes those lanes at
// expLo and zeroes them, so no instruction underflows: on Intel cores a
// subnormal result costs a microcode assist of about a hundred cycles,
// which would make the masked (−Inf) entries of an attention score tile
// cost a dozen times the others (BenchmarkExpSubRowsMasked).
//
// Accuracy, against float64 math.Exp, for x in [expLo, 88.72] (the inputs
// whose exp is a normal float32): the maximum relative error is 9.8e-8 on
// the pure-Go path and 7.7e-8 with FMA (AVX2, AVX-512), under one ulp,
// measured over every float32 in that range (TestExp32Exhaustive, run with
// TOKENMIX_EXP_EXHAUSTIVE=1); TestExp32Accuracy checks 5M points on every
// path against ExpMaxRelErr. x < expLo and -Inf give 0, x ≥ 88.73 and +Inf
// give +Inf, NaN gives NaN (TestExp32Special).
const (
	expLo    = -87.33654 // float32 0xc2aeac4f: exp(expLo) ≥ 2⁻¹²⁶ > exp(the next float32 down)
	expHi    = 89.0      // exp(89) > MaxFloat32 overflows to +Inf
	expLog2e = 1.44269504088896341
	expShift = 12582912.0 // 1.5·2²³: adding it rounds to an integer
	// ln2 = expLn2Hi + expLn2Lo (Cody–Waite).
	expLn2Hi = 0.693145751953125     // 0x3f317200
	expLn2Lo = 1.428606765330187e-06 // 0x35bfbe8e
	expC0    = 0.4999999403953552    // 0x3efffffe
	expC1    = 0.1666652113199234    // 0x3e2aaa49
	expC2    = 0.04166839271783829   // 0x3d2aac7a
	expC3    = 0.00836874358355999   // 0x3c091d0e
	expC4    = 0.0013814519625157118 // 0x3ab511d6
	expBits  = 0x4b400000            // math.Float32bits(expShift)
)

// ExpMaxRelErr is the documented bound on the relative error of the float32
// Exp for inputs in [-87.33, 88.72] (the measured maximum is 9.8e-8).
const ExpMaxRelErr = 4e-7

// expf is the pure-Go float32 exp, the same algorithm as the assembly.
func expf(x float32) float32 {
	if x < expLo {
		return 0
	}
	if x > expHi {
		x = expHi
	}
	if x != x {
		return x
	}
	k := x*expLog2e + expShift
	n := int32(math.Float32bits(k)) - expBits
	nf := k - expShift
	r := x - nf*expLn2Hi
	r -= nf * expLn2Lo
	q := (((expC4*r+expC3)*r+expC2)*r+expC1)*r + expC0
	p := (q*r+1)*r + 1
	n1 := n >> 1
	n2 := n - n1
	return p * math.Float32frombits(uint32(n1+127)<<23) * math.Float32frombits(uint32(n2+127)<<23)
}

// RefExp32 is the oracle float32 exp: math.Exp per element, rounded.
func RefExp32(dst, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = float32(math.Exp(float64(x)))
	}
}
