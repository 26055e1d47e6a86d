// Package fft is tokenmix's discrete Fourier transform: a complex FFT of any
// length, generic over float32 and float64, on split real/imaginary slices.
//
// A Plan for length n computes the forward DFT
//
//	X[k] = Σ_{j<n} x[j]·exp(−2πi·jk/n),  k = 0…n−1,
//
// unnormalised. Lengths whose prime factors are all ≤ 13 use an iterative
// mixed-radix Stockham algorithm (radix-4, 2 and 3 butterflies, and one
// butterfly for the odd primes 5, 7, 11 and 13 that pairs inputs j and p−j,
// so it needs about half the products of the plain O(p²) sum), O(n·log n)
// and autosorting (no bit reversal). Other lengths use Bluestein's chirp-z algorithm, which writes the
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
// n/2 (RealPlan.Batch gives the derivation). The packing reads rows k, −k,
// k+M and M−k of z; outputs k and M−k read the same four rows, so they are
// packed together (AVX-512 for 16 columns) and each row is read once.
// Batch writes even and odd outputs straight to strided destinations, which
// may be its own input (FNet overwrites the columns it transforms): all of
// z is read before anything is written.
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
// Four-step path. A plan of composite mixed-radix length n = n1·n2
// (n2 ≤ 64, the largest such divisor with n2² ≤ n) also holds the
// cache-blocked decomposition: with j = j1·n2 + j2 and k = k1 + n1·k2,
//
//	X[k1 + n1·k2] = Σ_{j2} W_{n2}^{j2·k2} · W_n^{j2·k1} · Σ_{j1} x[j1·n2 + j2]·W_{n1}^{j1·k1}.
//
// Viewing the [n, w] batch as [n1, n2·w], step 1 does the n1-point
// transforms one slab of columns at a time (≤ 64 columns, ≤ 16384 elements,
// gathered into a contiguous buffer so the slab and its ping-pong copy stay
// in L2, transformed by the same Stockham driver with width = slab width),
// multiplies by W_n^{j2·k1} on the way back (AVX-512 twiddle kernel) into an
// intermediate Y whose rows are padded off multiples of 4 KiB; step 2 runs
// the n2-point transforms of each contiguous row of Y (width w, in L1) and
// scatters them to natural order, eight rows at a time so the scattered
// writes come in runs. For RealPlan the packing is fused into the slab
// gather and the scatter writes the even/odd outputs directly.
//
// The path is tested against the naive DFT and the plain run (float32 and
// float64, every kernels path, lengths that split evenly and unevenly) but is
// off by default (fourStepMinNW): measured on a shared 2-vCPU AVX-512 EPYC
// (Zen 5 class, 1 MiB L2) by alternating both paths iteration by iteration
// and timing CPU, it is slower than the plain passes, which
// stream from L2/L3 nearly as fast, except where the plain run's odd pass
// count costs it a copy back. Four-step ÷ plain CPU time, float32, w=16,
// one and two threads: TransformBatch n=2048 1.25, 4096 1.06–1.08,
// 8192 0.90, 16384 1.31–1.38, 65536 1.77–1.81; FNet's time pass at d=256
// (RealPlan) T=4096 1.06–1.21, T=8192 1.00–1.01, T=16384 1.02
// (`go test -run X -bench 'RealBatchAB|^BenchmarkBatch$' ./kernels/fft/`,
// also with TOKENMIX_THREADS=1).
// At T=16384 FNet's cost is memory traffic on its [T, D/2] spectrum, not the
// radix passes.
//
// Plans are immutable after construction (the four-step tables are built
// once, on first use) and safe for concurrent use; each caller supplies its
// own scratch (ScratchLen elements per slice). PlanFor caches one plan per
// (length, element type).
//
// Shape letters: n transform length, w interleaved sequences, M Bluestein
// convolution length.
package fft
