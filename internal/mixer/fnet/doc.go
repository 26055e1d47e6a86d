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
// # The FFT path, time first (D ≤ TimeFirstMaxD)
//
// Split X into its even and odd parts under c → D−c: for the channel pairs
// c = 0…nz−1 (nz = (D+1)/2), Xe[:, c] = x[:, c] + x[:, D−c] and
// Xo[:, c] = x[:, c] − x[:, D−c] (Xe[:, 0] = x[:, 0], Xo[:, 0] = 0; for
// even D the Nyquist channel x[:, D/2] is kept apart). Since cos is even
// and sin odd in c, X·C_D = Xe·C and X·S_D = Xo·S with the folded
// matrices C = C_D[0…D/2, 0…D/2] and S = S_D[1…ns, 1…ns], ns = (D−1)/2,
// so with Ce = C_T·Xe (even in t) and So = S_T·Xo (odd in t)
//
//	U = Ce·C,  V = So·S,
//	out[t, c] = out[T−t, D−c] = U[t, c] − V[t, c],
//	out[t, D−c] = out[T−t, c] = U[t, c] + V[t, c],
//
// for t ≤ T/2 and c ≤ D/2: half the rows and half the columns of the
// channel matrix, T·D²/2 GEMM flops against the channel-first order's T·D².
// Both time transforms come from one: for z = Xe + i·Xo,
// y = Re(FFT_T z) = C_T·Xe + S_T·Xo, so Ce[t] = (y[t] + y[−t])/2 and
// So[t] = (y[t] − y[−t])/2 (the 1/2 is folded into cached halved C and S).
// Two passes, each split over the threads:
//
//  1. Time: per block of 16 channel pairs, for even T, fold the block's
//     columns of x (and their partners D−c, read reversed, AVX-512) straight
//     into the packed input of the half-length transform (foldPack: packed
//     row k needs the folded rows k, −k, k+M and M−k, which are folded from
//     x on the fly, rows k and M−k together) and run fft.RealPlan.BatchPacked
//     on it; for odd T fold the block into the thread's work space and run
//     fft.Plan.TransformBatch. The real parts go to the block's columns of
//     y [B·T, zStride(D)]; the Nyquist channel (even D) is gathered into a
//     column of its own and gets its own Re(FFT_T), which is C_T·x[:, D/2].
//  2. Output: per chunk of at most 256 time frequencies t ≤ T/2 (an equal
//     share per thread), rows t and T−t of y (prefetched a few rows ahead)
//     give 2·Ce and 2·So (AVX-512 sum and difference), two GEMMs
//     (kernels.GemmST) give U (nz columns, K = D/2+1; for even D column D/2
//     is a dot product per row, so that at D=256 the GEMM is exactly 128
//     wide) and V ([m, ns]·[ns, ns]), their sum and difference are written
//     (or added) to whole rows t and T−t of out with the channel mirror
//     (unfoldRow), whose rows are prefetched a few rows ahead too.
//
// x is read once (a block touches three cache lines of each row, its own
// and its partners' two, so about 1.5× x in lines), y (half the size of x)
// written once and read once, out written once: one B·T buffer (y) instead
// of the channel-first order's two (Re Z and Im Z) and two fewer passes over
// them. Memory O(T·D): y is T·16⌈nz/16⌉ elements per sequence, plus the
// Nyquist column, and per thread one packed block [T/2, 16] (real and
// imaginary) with the transform's scratch (for odd T the folded block
// [T, 16]), or the output chunk's buffers, whichever is larger.
//
// # The FFT path, channels first (D > TimeFirstMaxD)
//
// Since TimeFirstMaxD (768) exceeds ChannelGemmMaxD (512), the default
// reaches this order only above D=768, with the row-pair channel FFTs; the
// channel GEMM below runs when TimeFirstMaxD is lowered (the tests do).
// The channel-first order works on a half spectrum Z [T, D/2+1] = X·(C_D − i·S_D)[:, 0…D/2]
// (the other channel frequencies follow from Hermitian symmetry,
// out[t, D−k] = out[(T−t) mod T, k]), in three passes, each split over the
// threads:
//
//  1. Channels: for D ≤ ChannelGemmMaxD, per chunk of 256 rows, fold each
//     row into its even and odd parts under c → D−c (x[c] ± x[D−c]; cos is
//     even and sin odd in c, which halves the products) and multiply by the
//     cached cos and −sin matrices with kernels.GemmST: 2·T·(D/2)·D flops.
//     For wider D, one complex FFT per pair of rows (x₁ + i·x₂,
//     fft.Plan.Real2), O(T·D·log D) but scalar. Z holds the frequencies
//     0…(D+1)/2−1; for even D the Nyquist frequency D/2, which is real
//     (Σ_c (−1)^c·x[c], an alternating sum the fold computes on the way),
//     gets a column of its own, so that at D=256 a row of Z is exactly 128
//     floats: eight column blocks and no ninth cache line per row.
//  2. Time: the kept columns in blocks of 16 (Z's rows are padded to a
//     multiple of 16 floats so that blocks are cache-line aligned), and the
//     Nyquist column. Only Re(FFT_T z) is needed, and Re(F z) = F u for the
//     Hermitian u[t] = (z[t] + conj z[−t])/2, whose transform is real: for
//     even T it is one batched complex FFT of length T/2 (fft.RealPlan, even
//     and odd outputs packed as real and imaginary parts; 16 interleaved
//     sequences, so every Stockham pass runs in AVX-512 for float32); odd T
//     use the full-length fft.Plan.TransformBatch. RealPlan reads each row
//     of the block once (outputs k and T/2−k read the same four rows) and
//     writes the real parts straight back into the block's own columns of
//     Z, rows 2m and 2m+1, with no intermediate copy.
//  3. Output: whole rows of out (or of dx, accumulated) from row t of Re Z
//     and, reversed, row (T−t) mod T, rows t and T−t together so that each
//     row of Re Z is read once: streaming writes, so the accumulating
//     backward does no scattered read-modify-write.
//
// The fold and the output pass use AVX-512 (lane reversal with VPERMPS) for
// float32, with plain-Go twins. Memory O(T·D): Z is 2·T·16⌈((D+1)/2)/16⌉
// elements, the Nyquist column and a zero column 2·T for even D, plus
// per-thread work space.
//
// Measured (2 threads, AVX-512 EPYC, float32, d=256, B=1, forward+backward,
// `tokenmix --threads 2 bench mixer --config C --len T --batch 1 --json`
// with C = {"d_model": 256, …, "mixer": {"kind": "fnet"}}), before → after
// this design, one back-to-back run: T=1024 3.9 → 0.75 ms, T=4096 14.5 →
// 3.6–3.75 ms, T=16384 59.6 → 15.6 ms (so T=16384/T=1024 went from 15 to
// 21: the short sequence now runs from cache), against 16.5–18.2 ms for
// PyTorch 1.13's torch.fft.fft2(x).real at T=4096
// (scripts/bench_torch_aft.py --kinds fnet --reps 21; with its default 5
// reps it reads 17–97 ms, dominated by slow first reps), run right after on
// the same machine. The channel GEMM
// beats the row-pair FFTs 2.0× at D=256 and 1.2× at D=512 but loses
// (0.8×) at D=1024 (T=2048 forward), hence ChannelGemmMaxD = 512.
//
// Long sequences (issue #7: T=16384 / T=1024 ≤ 20). The diagnosis was that
// a 16-column block of the time FFT (2 MiB with its ping-pong copy at
// T=16384) spills L2 on each radix pass; kernels/fft gained a cache-blocked
// four-step path for that, but measured on this machine it does not beat
// the plain passes (its package doc has the A/B numbers), so it is off.
// What grows faster than T is memory traffic: single-thread CPU time per
// forward at T=16384 against T=1024 (d=256; a throwaway per-phase probe
// taken before the Nyquist and paired-row changes below, shared machine)
// was channel pass (fold + GEMM, reading x and writing Z)
// 9.4 ms vs 0.46 ms (20×), time pass 2.8 vs 0.08 ms (37×), one-column
// Nyquist block 0.40 vs 0.008 ms, output pass 1.9 vs 0.035 ms (54×): at
// T=16384 x, Z and out (16–19 MiB each) live in DRAM, at T=1024 in cache.
// Hence the traffic cuts above: no [T/2, 16] copy of the packed spectrum and
// no copy of the block's result (RealPlan writes the real parts in place),
// every row of Z read once by the packing and once by the output pass, and
// the Nyquist column kept apart (11% less Z, no one-column block).
// Before → after, min of 6 interleaved runs on a shared machine (another
// job held ~1.75 of the 2 vCPUs, so absolute times are about twice the
// quiet ones), `go test -run X -bench '/fft/T=(1024|16384)$' ./mixer/fnet/`:
// 2 threads wall, forward T=1024 0.94 → 0.75 ms, T=16384 16.4 → 14.6 ms;
// backward 0.86 → 0.74 and 16.2 → 14.7 ms; one thread (TOKENMIX_THREADS=1)
// CPU time, forward 0.64 → 0.60 and 14.7 → 13.7 ms, backward 0.63 → 0.61 and
// 15.2 → 14.5 ms. Both lengths got faster by similar fractions, so the
// T=16384 / T=1024 ratio did not measurably move under that load (one
// thread: 23.6 before, 23.4 after); whether it is now ≤ 20 on a quiet
// machine (21.4 before) needs a quiet re-measurement.
//
// Time first, measured on a quiet machine (the same 2-vCPU AVX-512 EPYC,
// float32, d=256, B=1). Issue #7's command,
// `tokenmix --threads 2 bench mixer --config C --len T --batch 1 --reps 21
// --json` with C = {"vocab_size": 256, "d_model": 256, "n_heads": 4,
// "n_layers": 1, "d_ff": 1024, "max_len": 16384, "causal": false,
// "task": "lm", "mixer": {"kind": "fnet"}}, 8 rounds alternating T=1024,
// T=16384 and a build of the channel-first order, forward+backward median
// (min): channel first 0.584 (0.579) ms at T=1024 and 13.80 (13.65) ms at
// T=16384, time first 0.446 (0.437) and 10.43 (10.20) ms. That is 24% less
// time at both lengths, so T=16384/T=1024 stays where it was: 23.4 (rounds
// 23.1–24.1) against channel-first's 23.6 measured alongside, so issue
// #7's bound of 20 was not met then (it is now; see below). In-process A/B (BenchmarkOrderAB, 2 threads,
// wall), time-first ÷ channel-first forward (backward): T=1024 0.84
// (0.84–0.85), T=4096 0.78–0.82 (0.81–0.83), T=16384 0.73 (0.76–0.79).
// A throwaway per-phase probe (2 threads, wall, forward) gives the time
// pass 0.085 ms at T=1024 and 2.31 ms at T=16384 (27×, of which the FFT's
// n·log n accounts for 23×) and the output pass 0.163 vs 2.82 ms (17×;
// backward, which reads dx, 0.172 vs 3.49 ms). The channel GEMMs scale
// linearly and the time transforms do not, so halving the GEMMs made both
// lengths faster without lowering the ratio; at T=1024 the 2-thread speed-up
// is only 1.3× on the time pass and 1.5× on the output pass (1.7× and 1.8×
// at T=16384), which is the other half of why the short sequence is cheap.
// Kept because measured here (the first later removed, see below):
// non-temporal output stores (forward at
// T=16384 −7% with 2 threads, −5% with one), prefetching 16 rows ahead in
// the strided fold (−2% with 2 threads, none with one), dynamic order of the
// time-pass items. Tried and dropped: streaming y with non-temporal stores
// through the work space (+4–5% at T=16384: y is partly still cached when
// the output pass reads it) and the four-step FFT for the time blocks (+7%).
// Not tried: a radix-2 split of the channel GEMMs (rows j of C and S at
// columns c and D/2−c differ by the sign ±(−1)^j, so even and odd j could
// be multiplied separately, halving the flops again: faster at both
// lengths, but a higher ratio).
//
// Issue #7 met (later session). Three changes took T=16384 / T=1024 below
// 20, each kept because an A/B in one process (15 alternating rounds,
// 2 threads, d=256) showed it at T=16384 and T=1024 was unchanged or
// faster: the output pass prefetches rows t and T−t of y and the dst rows
// it writes or adds to (hardware prefetchers stop at 4 KiB pages, a few
// whole rows apart; backward 5.7 → 4.7 ms, forward 5.0 → 4.9); RealPlan
// splits the long half-length transform into an in-place radix-4 pass and
// four quarters that stay in L2 (4–5%); foldPack folds x straight into the
// packed input, without the [T, 16] folded block (8–10%). Issue #7's
// command, two builds alternating (the commit before these changes and
// one with them), 6 rounds: forward+backward at T=16384 10.2–12.3 →
// 8.4–9.6 ms, ratio 21.9–25.5 (median 23.6) → 17.3–21.7 (median 19.0).
// The same session then removed the non-temporal output stores (which an
// earlier session had added for outputs of ≥ 4M elements, and this one had
// extended to the backward, written straight from U ± V): in this
// benchmark, where nothing reads the output, they made T=16384 about 3%
// faster, and at T=65536 no faster, but a 4-layer FNet training step
// (`tokenmix bench train`, d=256, B=16, T=1024, so also 4M-element
// outputs) ran about 1.5% slower with them (16 alternating samples, median
// 875 against 862 ms), since the next operation reads the output back from
// memory. Final, in docs/performance.md: ratio 18.2 (rounds 17.8–19.8); 12 more
// rounds gave a median of 19.3 and a range of 17.6–21.0, the two lengths'
// times each moving by about ±10% from round to round on this shared
// machine. Tried and dropped on the way: non-temporal stores for y in the
// interleave (+4–6%: y is still in L3 when the output pass reads it), a
// second level of the radix-4 split (+1–2%, its extra interleave pass), a
// dynamic order for the output chunks, deeper prefetching in foldPack (16
// or 32 rows), PREFETCHNTA for x, prefetching the next chunk's rows of y
// during the output writes (backward +3%), and transparent huge pages for
// x, out and the scratch (all within noise unless noted).
// What is left above 16× is the FFT's n·log n (7 passes at T=16384, 5 at
// T=1024) and x, y and out streaming from L3 and memory at T=16384
// (16, 8 and 16 MiB) while T=1024 runs from L2: per call, foldPack (x) costs
// 2.7×, the radix passes 1.8× and the output rows 1.3× what sixteen calls
// at T=1024 cost, against 0.9× for the channel GEMMs.
//
// The GEMM path evaluates C_T·X·C_D − S_T·X·S_D with kernels.Gemm and cached
// cos/sin matrices (computed in float64 from exactly reduced angles): three
// products, 4·T·D² + 4·T²·D flops and 2·T² + 2·D² cached elements. Since the
// FFT path vectorised, it is slower at every length measured (T ≥ 8 at
// d=256, see GemmMaxT), so "method":"auto" (the default) always uses the FFT
// path; "method":"gemm" keeps the GEMM path as an independent check.
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
