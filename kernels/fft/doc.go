// Package fft is tokenmix's discrete Fourier transform: a complex FFT of any
// length, generic over float32 and float64, on split real/imaginary slices.
//
// A Plan for length n computes the forward DFT
//
//	X[k] = Σ_{j<n} x[j]·exp(−2πi·jk/n),  k = 0…n−1,
//
// unnormalised. Lengths whose prime factors are all ≤ 13 use an iterative
// mixed-radix Stockham algorithm (radix-4, 2 and 3 butterflies, a generic
// butterfly for 5, 7, 11 and 13), O(n·log n) and autosorting (no bit
// reversal). Other lengths use Bluestein's chirp-z algorithm, which writes the
// DFT as a convolution with the chirp exp(−iπj²/n) and evaluates it with
// power-of-two FFTs of length M ≥ 2n−1, still O(n·log n).
//
// Every twiddle factor and chirp is computed in float64 from an exactly
// reduced angle (index products are taken mod n before scaling by 2π/n) and
// only then rounded to F, so float32 transforms carry no accumulated
// recurrence error: their error grows like ε·log n.
//
// Real input. Real2 transforms two real sequences with one complex FFT
// (x1 + i·x2) and separates the half spectra using Hermitian symmetry, which
// halves the work for real data such as FNet's channel transform.
//
// Real part of a complex transform. RealPlan computes only Re(DFT_n z) of
// complex sequences of even length n: since Re(F z) = F u for the Hermitian
// u[t] = (z[t] + conj z[−t])/2, whose transform is real, the even and odd
// outputs are the real and imaginary parts of one complex transform of length
// n/2 (RealPlan.Batch gives the derivation). Its packing loop also has an
// AVX-512 form.
//
// Batches. TransformBatch transforms w interleaved sequences (element j of
// sequence q at j·w+q) in one Stockham run whose strides are all multiplied
// by w, so every butterfly streams w contiguous elements. For float32 on the
// AVX-512 path (kernels.CurrentPath), the radix-4 and radix-2 passes whose
// stride is a multiple of 16 run in assembly (fft_amd64.s), 16 lanes at a
// time with broadcast twiddles; the plain-Go butterflies are their twin and
// handle everything else. With w ≥ 16 every pass is vectorised, which is why
// FNet transforms its time axis on blocks of 16 columns.
//
// Plans are immutable after construction and safe for concurrent use; each
// caller supplies its own scratch (ScratchLen elements per slice). PlanFor
// caches one plan per (length, element type).
//
// Shape letters: n transform length, w interleaved sequences, M Bluestein
// convolution length.
package fft
