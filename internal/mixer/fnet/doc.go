// Package fnet is the FNet token mixer: the real part of the unnormalised
// two-dimensional discrete Fourier transform of each sequence, over its
// channels and over time.
//
// Paper: J. Lee-Thorp, J. Ainslie, I. Eckstein, S. Ontañón, "FNet: Mixing
// Tokens with Fourier Transforms", 2021 (arXiv:2105.03824).
//
// # Equations
//
// For one sequence x [T,D]:
//
//	y = Re(FFT_seq(FFT_hidden(x))),
//	y[t,c] = Σ_{t'<T} Σ_{c'<D} x[t',c']·cos(2π·(t·t'/T + c·c'/D))
//	       = (C_T·x·C_D − S_T·x·S_D)[t,c],
//
// where C_n[j,k] = cos(2πjk/n) and S_n[j,k] = sin(2πjk/n) are symmetric
// n×n matrices. There are no parameters and no normalisation (as in the
// paper and torch.fft.fft2(x).real).
//
// # Masking
//
// FNet has no causal form: every output mixes every position, and
// "causal": true is a config error. It does not honour key padding either
// (the kind declares KeyPadding false): padding positions are mixed exactly
// like real tokens, as in the paper, so outputs at real positions depend on
// the pad embeddings.
//
// # Backward
//
// The map A: x ↦ y is linear with kernel
// M[(t,c),(t',c')] = cos(2π·(t·t'/T + c·c'/D)), which is unchanged when
// (t,c) and (t',c') swap, so A = Aᵀ and
//
//	dx += Aᵀ·dy = Re(FFT_seq(FFT_hidden(dy))):
//
// backward is forward applied to dout, accumulated into dx, and forward
// saves nothing (ActSize is 0). The tests check it by finite differences
// and by the adjoint identity ⟨A x, y⟩ = ⟨x, A y⟩.
//
// # Cost
//
// A full two-dimensional FFT costs O(T·D·log(T·D)). The time axis is always
// transformed by FFT, O(T·D·log T). The channel axis is a DFT computed as
// GEMMs against cached cos/sin matrices for D ≤ TimeFirstMaxD (T·D²/2 flops,
// see the time-first order below), because at those widths a vectorised
// GEMM beats FFT butterflies that run scalar along a row, and by FFTs of
// pairs of rows, O(T·D·log D), for wider D. Either way the cost is
// O(T·log T) in the sequence length, and memory is O(T·D) scratch, never
// T×T.
//
// "method": "gemm" evaluates C_T·x·C_D − S_T·x·S_D directly with
// kernels.Gemm: 4·T·D² + 4·T²·D flops and 2·T² + 2·D² cached elements.
// "auto" (the default) never chooses it (GemmMaxT is 0); it is kept as an
// independent check of the FFT path.
//
// # Numerics
//
// The cos/sin matrices, like the FFT twiddles (package kernels/fft), are
// computed in float64 from exactly reduced angles and then rounded to the
// element type, so float32 results carry no accumulated twiddle error.
//
// # The FFT path, time first (D ≤ TimeFirstMaxD)
//
// Split x into its even and odd parts under c → D−c: for the channels
// c = 0…nz−1 (nz = (D+1)/2), Xe[:, c] = x[:, c] + x[:, D−c] and
// Xo[:, c] = x[:, c] − x[:, D−c] (Xe[:, 0] = x[:, 0], Xo[:, 0] = 0; for
// even D the Nyquist channel x[:, D/2] is kept apart). Since cos is even
// and sin odd in c, x·C_D = Xe·C and x·S_D = Xo·S with the folded matrices
// C = C_D[0…D/2, 0…D/2] and S = S_D[1…ns, 1…ns], ns = (D−1)/2, so with
// Ce = C_T·Xe (even in t) and So = S_T·Xo (odd in t)
//
//	U = Ce·C,  V = So·S,
//	y[t, c] = y[T−t, D−c] = U[t, c] − V[t, c],
//	y[t, D−c] = y[T−t, c] = U[t, c] + V[t, c]
//
// for t ≤ T/2 and c ≤ D/2: half the rows and half the columns of the
// channel matrix, T·D²/2 GEMM flops against T·D² in the channel-first
// order. Both time transforms come from one: for z = Xe + i·Xo,
// Re(FFT_T z) = C_T·Xe + S_T·Xo, so Ce[t] and So[t] are the half sum and
// half difference of its rows t and −t (the 1/2 is folded into cached,
// halved C and S). Two passes, each split over the threads:
//
//  1. Time: per block of 16 channel pairs, the block's columns of x and
//     their partners D−c are folded and transformed. For even T they are
//     folded straight into the packed input of the half-length transform
//     (foldPack, then fft.RealPlan.BatchPacked), so no folded copy of the
//     block is stored; for odd T they are folded into the thread's work
//     space (foldBlock) and transformed by fft.Plan.TransformBatch. The
//     real parts go to the block's columns of y [B·T, zStride(D)]; the
//     Nyquist channel (even D) is gathered into a column of its own and gets
//     its own Re(FFT_T). Work items are taken dynamically, Nyquist columns
//     last, so that the threads finish together.
//  2. Output: per chunk of at most outChunk time frequencies t ≤ T/2 (an
//     equal share per thread), rows t and T−t of y give 2·Ce and 2·So, two
//     GEMMs (kernels.Gemm on one thread) give U and V, and their sum and difference are
//     written (or added) to whole rows t and T−t of the output through the
//     channel mirror (unfoldRow). For even D, column D/2 of U is a dot
//     product per row, so that at D=256 the GEMM is exactly 128 columns
//     wide. The pass prefetches the rows of y it reads next and the output
//     rows it writes (rowPrefetch): at long T those row streams cross a
//     4 KiB page every few rows, where hardware prefetchers stop.
//
// Memory: y is B·T·zStride(D) elements, plus for even D the Nyquist column
// [B·T] and a zero column [T], plus per thread the larger of one packed
// column block with its transform's scratch (for odd T the folded block)
// and one output chunk's buffers.
//
// # The FFT path, channels first (D > TimeFirstMaxD)
//
// With the default constants this order runs only above D=768, with
// row-pair channel FFTs; its channel GEMM runs when TimeFirstMaxD is
// lowered, as the tests do. It works on a half spectrum
// Z [T, nz] = x·(C_D − i·S_D)[:, 0…nz−1] (the other channel frequencies
// follow from Hermitian symmetry, y[t, D−k] = y[(T−t) mod T, k]) in three
// passes, each split over the threads:
//
//  1. Channels: for D ≤ ChannelGemmMaxD, per chunk of foldChunk rows, each
//     row is folded into its even and odd parts (foldRow) and multiplied by
//     the cached cos and −sin matrices with kernels.Gemm on one thread, 2·T·(D/2)·D
//     flops; for wider D, one complex FFT per pair of rows (x₁ + i·x₂,
//     fft.Plan.Real2), O(T·D·log D). For even D the Nyquist frequency D/2,
//     which is real (Σ_c (−1)^c·x[c]), gets a column of its own, so that at
//     D=256 a row of Z is exactly 128 floats: eight column blocks and no
//     ninth cache line per row.
//  2. Time: the kept columns in blocks of 16 (Z's rows are padded to a
//     multiple of 16 floats so that blocks are cache-line aligned), and the
//     Nyquist column. Only Re(FFT_T z) is needed, which for even T is one
//     half-length transform (fft.RealPlan.Batch, writing the real parts
//     straight back into the block's own columns of Z); odd T use the
//     full-length fft.Plan.TransformBatch.
//  3. Output: whole rows of the output from row t of Re Z and, reversed,
//     row (T−t) mod T, rows t and T−t together so that each row of Re Z is
//     read once and the accumulating backward does no scattered
//     read-modify-write.
//
// Memory: Z is 2·B·T·zStride(D) elements, plus the Nyquist and zero
// columns for even D and per-thread work space.
//
// # Kernel layout
//
// Column blocks are 16 wide (colBlock) because fft.Plan.TransformBatch
// vectorises every Stockham pass of a 16-sequence float32 batch with
// AVX-512. The folds, the mirrored output rows and the sum/difference
// passes have AVX-512 float32 forms (lane reversal with VPERMPS) and
// plain-Go twins that handle float64, other CPUs and the remainders. The
// output is written with ordinary stores, not non-temporal ones, because
// the next operation of the model reads it back straight away.
//
// # Files
//
//   - fnet.go: the registry entry (Kind), New and its options, the FNet
//     type's Mixer methods, the dispatch between paths (apply), the "gemm"
//     method (applyGemm) and the channel-first FFT order (applyFFT,
//     channelGemm, channelFFT, timePass, fullBlock), with the cached cos/sin
//     matrices and the tuning constants.
//   - timefirst.go: the time-first FFT order (applyTimeFirst) and its halved
//     folded channel matrices.
//   - sym.go: the even/odd folds under c → D−c and their inverse (foldRow,
//     foldBlock, foldCols, foldPack, unfoldRow, sumDiff), choosing between
//     the assembly and the plain-Go loops.
//   - sym_amd64.go, sym_amd64.s: the AVX-512 kernels; sym_other.go: stubs
//     for other architectures, where the assembly is never used.
//   - conformance.go: the configurations the mixer conformance suite runs.
//
// # Config
//
//	"mixer": {"kind": "fnet"}                   // method "auto"
//	"mixer": {"kind": "fnet", "method": "fft"}  // or "gemm": force one path
//
// with "causal": false in the model config.
//
// # Precision
//
// FNet has no weights and no products with learned operands: under
// "precision": "bf16" its transforms (FFT and the cached cos/sin GEMMs)
// stay float32.
package fnet
