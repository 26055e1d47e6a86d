// Package aft is the Attention Free Transformer family of token mixers:
// aft_full, aft_simple, aft_local and aft_conv.
//
// Paper: S. Zhai, W. Talbott, N. Srivastava, C. Huang, H. Goh, R. Zhang,
// J. Susskind, "An Attention Free Transformer", 2021 (arXiv:2105.14103).
//
// # Equations
//
// Q, K, V are linears D→D of the input x [T,D] (parameters q, k, v), σ is
// the logistic sigmoid, o is an output linear D→D, and all operations are
// per channel c:
//
//	Y[t,c] = σ(Q[t,c]) · Σ_{t'} exp(K[t',c] + w[t,t'])·V[t',c] / Σ_{t'} exp(K[t',c] + w[t,t'])
//	out    = o(Y)
//
// The sums run over the allowed t': t' ≤ t when causal, and never a padding
// position (Pass.Pad). The kinds differ only in w:
//
//	aft_full    w[t,t'] = pos_bias[t,t']                          pos_bias [max_len,max_len]
//	aft_simple  w ≡ 0 (a softmax of K over time)                  no extra parameter
//	aft_local   w[t,t'] = pos_bias[t,t'] if |t−t'| < s, else 0    pos_bias [max_len,max_len]
//	aft_conv    w[t,t'] = rel_bias[h(c), o] if t−t' = δ(o), else 0 rel_bias [h,s]
//
// For aft_conv, channel c belongs to head h(c) = ⌊c/(D/h)⌋, o runs over
// 0…s−1, δ(o) = o when causal (o = 0 is the token itself, looking back) and
// δ(o) = o − (s−1)/2 when bidirectional (s odd): a per-head depthwise
// relative kernel, the paper's 1-D AFT-conv. Beyond the window w is 0, not
// −∞: distant tokens still contribute with the AFT-simple weight exp(K).
// With the option "distant": false (aft_local and aft_conv) w is −∞ there
// instead: a sliding window, whose output at t depends on the window's
// tokens only, so a model trained on short chunks reads a long input as it
// read the chunks (the distant term's share grows with T otherwise).
// pos_bias and rel_bias are initialised to zeros and excluded from weight
// decay; the unused entries of aft_local's pos_bias get zero gradient.
//
// # Kernels and complexity
//
// No kernel materialises a T×T×D tensor; activations are O(T·D).
//
//   - aft_simple, O(T·D): bidirectionally one softmax over time per channel
//     (R is the same for every t); causally running sums of exp(K)⊙V and
//     exp(K) with a running maximum m[t] (a new maximum rescales the sums by
//     exp(m_old − m_new) ≤ 1). Backward is the matching suffix scan
//     S[t] = g[t] + exp(m[t] − m[t+1])·S[t+1]. Both run as blocked scans over
//     64-row blocks (block summaries merged with the running-max rule, then
//     each block replayed from the state before it), so every pass streams
//     whole rows in parallel over (sequence, row block).
//   - aft_local and aft_conv, O(T·s·D): the AFT-simple sums (totals, or
//     prefix sums when causal) weighted by c0 = exp(−mw) plus a banded
//     correction (exp(w − mw) − c0) inside the window, as the paper writes
//     AFT-conv. The band is applied as GEMMs of 64-row tiles with the stacked
//     [exp(K)⊙V | exp(K)] (kernels.Gemm on one thread inside parallel.For over
//     (sequence, row block)).
//   - aft_full, O(T²·D) time and O(T·D) memory: the same band machinery with
//     a band covering the whole row, i.e. tiled GEMMs exp(w)·(exp(K)⊙V) and
//     exp(w)·exp(K), building each 64×T tile of exp(w − mw) on the fly.
//
// Backward of the banded kinds applies the transposed tiles to
// (g | g⊙R) with g = dY⊙σ(Q)/den, and gets the bias gradient from the
// products g·(exp(K)⊙V)ᵀ − (g⊙R)·exp(K)ᵀ restricted to the band.
//
// # Numerical stability
//
// K is shifted by its per-channel maximum over the allowed positions of the
// sequence (a running maximum for causal aft_simple), and w by the per-row
// maximum mw[t] over the allowed t' (counting w = 0 for the distant tokens
// when any is allowed); both shifts cancel in the ratio. When a row has no
// allowed distant token, c0 = 0 and the band carries the row alone, so
// exp(w−mw) − c0 never cancels large values.
//
// The causal banded kinds (aft_full, aft_local, aft_conv) use the
// per-sequence maximum of K, not a running one, so that the band stays a
// GEMM: if within one sequence a channel of K spans more than ≈ 80 (float32
// exp underflow) an early row can underflow to den = 0. Outputs stay exactly
// causal in exact arithmetic; in floating point a later token can change an
// earlier output only through the shared shift, by rounding (≈ 1 ulp).
//
// Exclusions never produce 0/0: a row whose every t' is excluded (for
// example a causal row preceded only by padding, or a fully padded sequence)
// has den = 0 and outputs R = 0, hence Y = 0 and out = o.bias there, and it
// passes no gradient to K, V or the biases (its dQ is 0 too, since R = 0).
//
// # Config
//
//	"mixer": {"kind": "aft_simple"}
//	"mixer": {"kind": "aft_full"}                       // needs max_len
//	"mixer": {"kind": "aft_local", "window": 32}        // |t−t'| < 32 (default 32)
//	"mixer": {"kind": "aft_conv", "window": 31}         // 31 taps (default 31), heads = n_heads
//	"mixer": {"kind": "aft_conv", "window": 7, "heads": 4}
//	"mixer": {"kind": "aft_conv", "window": 255, "distant": false} // a sliding window
//
// Each works with "causal": true or false and with pad_id (key padding).
// A window is at most 2^30; aft_local's window beyond max_len is the same
// band as max_len.
//
// # Precision
//
// Under "precision": "bf16" the q, k, v and o projections multiply in bf16
// (proj.Set); the exp-weighted sums, the band products of aft_full, -local
// and -conv included, stay float32, as the model contract keeps AFT's exp
// sums (their terms span many orders of magnitude).
package aft
