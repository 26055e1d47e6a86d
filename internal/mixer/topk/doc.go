// Package topk is top-k attention (kind "topk"): every query attends only
// to its k highest-scoring allowed keys, from Zhao et al., "Explicit Sparse
// Transformer: Concentrated Attention Through Explicit Selection" (2019).
//
// # Turning it on
//
//	"mixer": {"kind": "topk", "k": 8}
//
// k ≥ 1 (default 8). The paper finds k around 8 best for translation and
// language modelling; small k also makes the layer cheap (below). "rope":
// true (with "rope_base", default 10000) rotates q and k by their positions
// before the scores, as for full attention (attn.Rope).
//
// # Equations
//
// q, k, v and o are d→d linears with the names and shapes of full attention;
// head h is the channel group [h·Dh, (h+1)·Dh). For query i with allowed keys
// A(i) (j ≤ i when causal, minus padded positions) and s_ij = q_i·k_j/√Dh,
// let θ_i be the k-th largest s_ij over A(i) (θ_i = −∞ when |A(i)| ≤ k) and
// K(i) = {j ∈ A(i) : s_ij ≥ θ_i}, so ties at the k-th value keep more than
// k keys. Then
//
//	p_ij = exp(s_ij) / Σ_{l∈K(i)} exp(s_il) for j ∈ K(i), else 0,
//	out = o(concat_h p·v),
//
// which is softmax over the scores with the others set to −∞. The gradient
// flows only through the kept entries: ∂L/∂s_ij = p_ij(dp_ij − Σ_l p_il dp_il),
// dp_ij = dout_i·v_j; the selection itself is piecewise constant.
//
// # Work and memory
//
// θ_i comes from an O(n) selection per row, never a sort: a k-entry
// min-heap scan for k ≤ 64 (n comparisons with the heap's root, about
// k·ln(n/k) replacements for random order) and quickselect with a three-way
// partition otherwise. The layer runs on the row-block engine
// attn.RuleAttention (shared with entmax) with C = 2k support entries per row: each block
// of 64 query rows costs one score GEMM and the selection; the kept
// (index, p) pairs go into act, y_i = Σ_{j∈K(i)} p_ij v_j is gathered, and
// backward is O(T·k·Dh) with nothing recomputed. A row block whose ties keep
// more than 2k entries per row on average falls back to the dense mode
// (y = P·v by GEMM, scores recomputed in backward). act is
// 4·B·T·D + 4·B·H·T + 2·B·H·T·2k: linear in T.
//
// # Precision
//
// Under "precision": "bf16" top-k keeps its q and k projections and its
// score product in float32 (RuleAttention.KeepScoresFP32): the kept set is
// chosen by rank, and bf16's 8-bit mantissa would change it among
// near-equal scores. The v and o projections and the backward's products
// run in bf16.
package topk
