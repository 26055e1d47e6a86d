// Package fnet is the FNet token mixer: the real part of the unnormalised
// two-dimensional discrete Fourier transform over time and channels.
//
// Paper: J. Lee-Thorp, J. Ainslie, I. Eckstein, S. Ontañón, "FNet: Mixing
// Tokens with Fourier Transforms", 2021 (arXiv:2105.03824).
//
// # Equations
//
// For one sequence x [T,D] (Fourier transform over channels, then time):
//
//	out[t,c] = Re Σ_{t'<T} Σ_{c'<D} x[t',c']·exp(−2πi·(t·t'/T + c·c'/D))
//	         = Σ_{t',c'} x[t',c']·cos(2π·(t·t'/T + c·c'/D))
//	         = (C_T·X·C_D − S_T·X·S_D)[t,c],
//
// where C_n[j,k] = cos(2πjk/n) and S_n[j,k] = sin(2πjk/n) are symmetric
// n×n matrices. There are no parameters, and no normalisation (as in the
// paper and torch.fft.fft2(x).real).
//
// # Backward: the operator is self-adjoint
//
// The map A: x ↦ out is linear with kernel
// M[(t,c),(t',c')] = cos(2π·(t·t'/T + c·c'/D)). Swapping (t,c) with (t',c')
// leaves the argument of the cosine unchanged, so M = Mᵀ and A = Aᵀ. For a
// loss L with dY = ∂L/∂out, the chain rule gives
//
//	dX[t',c'] = Σ_{t,c} dY[t,c]·M[(t,c),(t',c')] = (Aᵀ dY)[t',c'] = (A dY)[t',c'],
//
// that is dX = Re(FFT_time(FFT_channels(dY))): backward is forward applied
// to dout, accumulated into dx. The tests check this both by finite
// differences and by the adjoint identity ⟨A x, y⟩ = ⟨x, A y⟩.
//
// # Two kernels
//
// The FFT path works in two passes over a half spectrum
// Z [T, D/2+1] = X·(C_D − i·S_D)[:, 0…D/2] (the other channel frequencies
// follow from Hermitian symmetry, Re out[t, D−k] = Re out[(T−t) mod T, k]):
//
//  1. Channels: for D ≤ ChannelGemmMaxD, Z is two GEMMs of X against the
//     cached cos and −sin columns (kernels.Gemm, vectorised), 4·T·D·(D/2+1)
//     flops; for wider D, one complex FFT per pair of rows (x₁ + i·x₂,
//     fft.Plan.Real2), O(T·D·log D) but scalar.
//  2. Time: the kept columns in blocks of 16, each block one
//     fft.Plan.TransformBatch (16 interleaved sequences, so every Stockham
//     pass runs in AVX-512 for float32). Only the real part is needed, and
//     Re(F z) = F u for the Hermitian u[t] = (z[t] + conj z[−t])/2, whose
//     transform is real: for even T it is one complex FFT of length T/2 (even
//     and odd outputs packed as real and imaginary parts, fft.RealPlan);
//     odd T use the full-length transform.
//
// Memory O(T·D).
//
// The GEMM path evaluates C_T·X·C_D − S_T·X·S_D with kernels.Gemm and cached
// cos/sin matrices (computed in float64 from exactly reduced angles): three
// products, 4·T·D² + 4·T²·D flops and 2·T² + 2·D² cached elements. It wins
// only for short sequences, where the FFT's scalar butterflies cannot keep up
// with the vectorised GEMM. "method":"auto" (the default) uses the GEMM path
// when T ≤ GemmMaxT (64), a crossover measured with `go test -run X -bench
// Forward ./mixer/fnet/` (see GemmMaxT for the numbers).
//
// # Masking
//
// FNet has no causal form: "causal": true is a config error. It does not
// honour key padding either (the registry lists KeyPadding=false): padding
// positions are mixed exactly like real tokens, as in the paper, so outputs
// at real positions depend on whatever the pad embeddings are.
//
// # Config
//
//	"mixer": {"kind": "fnet"}                   // method "auto"
//	"mixer": {"kind": "fnet", "method": "fft"}  // or "gemm": force one kernel
//
// with "causal": false in the model config.
package fnet
