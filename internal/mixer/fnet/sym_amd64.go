package fnet

const haveSymAsm = true

// foldAVX512 runs nc chunks of foldRow: e[i] = a[i] + b'[i], o[i] = a[i] − b'[i]
// for i < 16·nc, where b' reads backwards from b[15] (chunk j's partners are
// b[−16j … 15−16j] reversed).
//
// It returns Σ_i (−1)^(1+i)·e[i], the chunks' part of foldRow's Nyquist
// term.
//
//go:noescape
func foldAVX512(e, o, a, b *float32, nc int) float32

// copyAVX512 sets (acc: adds) dst[i] = src[i] for i < 16·nc.
//
//go:noescape
func copyAVX512(dst, src *float32, nc int, acc bool)

// revAVX512 sets (acc: adds) dst[16j+l] = src[−16j+15−l] for j < nc, l < 16:
// src points at the lowest element of the first (reversed) chunk.
//
//go:noescape
func revAVX512(dst, src *float32, nc int, acc bool)

// sumDiffAVX512 sets s[i] = a[i] + b[i] and d[i] = a[i] − b[i] for
// i < 16·nc; s and d may be a and b.
//
//go:noescape
func sumDiffAVX512(s, d, a, b *float32, nc int)

// foldColsAVX512 folds one 16-column block of rows rows: for t < rows and
// l < 16, e[16t+l] = a[t·stride+l] + a'[t·stride+l] and
// o[16t+l] = a[t·stride+l] − a'[t·stride+l], where a'[t·stride+l] =
// b[t·stride+15−l] (b points at the lowest of the 16 partners, read
// reversed).
//
//go:noescape
func foldColsAVX512(e, o, a, b *float32, rows, stride int)

// prefetchLines prefetches n cache lines from p on (a hint: it never
// faults).
//
//go:noescape
func prefetchLines(p *float32, n int)

// foldPackAVX512 folds and packs cnt pairs of outputs (k, M−k) for
// foldPack, k = 1…cnt: rows k, −k, k+M and M−k of x start at x0, x1, x2,
// x3 (the block's first column), their partners mo bytes further (read
// reversed), rows stride floats apart; swap Z[k] goes to or (imaginary
// part do bytes further), swap Z[M−k] to or2, walking down; c and s point
// at the twiddles of k = 1. first ≠ 0 marks block 0, whose lane 0 is
// channel 0 (zr = x[t, 0], zi = 0; x[t, D] is not read).
//
//go:noescape
func foldPackAVX512(or, or2, x0, x1, x2, x3, c, s *float32, mo, stride, do, cnt, first int)
