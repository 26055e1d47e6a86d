// Package entmax is α-entmax attention (kind "entmax"): multi-head attention
// whose softmax is replaced by a sparse distribution, with an optional
// learned α per head, from Correia, Niculae and Martins, "Adaptively Sparse
// Transformers" (EMNLP 2019): the α-entmax Rule and row kernels on top of
// the sparse-attention engine attn.RuleAttention, which topk shares.
//
// # Turning it on
//
//	"mixer": {"kind": "entmax", "alpha": 1.5}
//	"mixer": {"kind": "entmax", "alpha": 1.5, "learn_alpha": true}
//
// alpha ≥ 1 (default 1.5): 1 is softmax, 1.5 the paper's default, 2
// sparsemax. "rope": true (with "rope_base", default 10000) rotates q and
// k by their positions before the scores, as for full attention
// (attn.Rope). With learn_alpha each block gets a parameter
// blocks.{i}.mixer.alpha_raw [n_heads] (no weight decay), head h uses
// α_h = 1 + sigmoid(alpha_raw_h), and alpha (then strictly inside (1, 2)) is
// the initial value: alpha_raw = logit(alpha − 1). The paper reports heads
// drifting both towards softmax and towards sparsemax; Stats reports α_h
// ("alpha/h{h}") and the mean fraction of exact zeros per query row
// ("zeros/h{h}") after each forward pass. To see which heads went sparse
// and which stayed dense, draw a trained model's attention weights on an
// input as heat maps, one panel per layer and head (exact zeros white,
// each label with its panel's fraction of exact zeros; full and top-k
// models draw the same way, for comparison):
//
//	tokenmix pattern --config c.json --weights run/weights.safetensors --text "some input" --out heat.png [--layer L]
//
// # Equations
//
// q, k, v and o are d→d linears (the names and shapes of full attention);
// head h is the channel group [h·Dh, (h+1)·Dh), Dh = d/n_heads. For query i
// the allowed keys A(i) are j ≤ i when causal, minus padded positions, and
//
//	s_ij = q_i·k_j/√Dh,   p_i = α-entmax(s_i over A(i)),   out = o(concat_h p·v).
//
// α-entmax(z) = argmax_{p ∈ Δ} pᵀz + H_α(p) with the Tsallis entropy
// H_α(p) = Σ_j (p_j − p_j^α)/(α(α−1)). With β = α−1 its solution is
//
//	p_j = [β·z_j − τ]₊^{1/β},   τ such that Σ_j p_j = 1,
//
// and τ ∈ [β·max z − 1, β·max z − n^{−β}] (n allowed keys). Disallowed keys
// get p = 0; a query with no allowed key gets output o(0).
//
// Thresholds (package functions Row, RowBackward; sort-based oracles in the
// tests):
//
//   - α = 2 (sparsemax): τ = (Σ_S z − 1)/|S| by Michelot's iteration from the
//     candidates z_j > max−1: exact, O(n) per pass, no sort.
//   - α = 1.5: exact, no sort. With w = z/2 and a candidate set S that
//     contains the support (initially w_j > max w − 1), the closed form
//     τ_S = mean_S − √((1 − Σ_S(w − mean_S)²)/|S|) of the sort-based
//     algorithm (Peters, Niculae, Martins 2019) is the exact τ as soon as
//     every w of S lies above it (near-uniform rows: the first pass).
//     Otherwise a Newton step on the convex, decreasing
//     g(τ) = ‖[w − τ]₊‖₂ − 1 rises towards the root without passing it and
//     entries below τ leave S for good; each step is one branch-free pass
//     that compacts S and sums Σw, Σw² (about 3–4 passes for attention-like
//     rows of 1024 scores).
//   - other α, and every learned α (method Bisect): the bracket
//     [β·max z − 1, β·max z − n^{−β}] of the bisection algorithm, entries
//     below its lower end dropped for good. For α ≤ 2 each step is a Newton
//     step from the lower end on g(τ) = ‖[β z − τ]₊‖_m − 1, m = 1/β, which is
//     convex and decreasing, so the step never passes the root and becomes
//     the new lower end (a step that rounding pushes out of the bracket is
//     replaced by a halving); about 5 passes per row instead of 30–50
//     halvings. For α > 2 it bisects (30 halvings in float32, 60 in
//     float64). τ is the lower end and p is renormalised.
//
// # Backward
//
// With g_j = p_j^{2−α} on the support and 0 elsewhere (Correia et al., Prop. 1):
//
//	∂L/∂z = g ⊙ dp − g·(Σ_j g_j dp_j)/Σ_j g_j,   dp_j = ∂L/∂p_j = dout_i·v_j.
//
// α = 1 gives the softmax backward and α = 2 the sparsemax one; top-k
// attention is the α = 1 case restricted to the kept keys.
//
// # Gradient with respect to α
//
// On the support write u_j = β z_j − τ, so p_j = u_j^{1/β}, log u_j = β log p_j
// and p_j/u_j = g_j. Differentiating log p_j = log(u_j)/β in α (dβ = dα):
//
//	∂p_j/∂α = p_j·(−log(u_j)/β² + (z_j − τ')/(β u_j))
//	        = (−p_j log p_j + g_j z_j − g_j τ')/β,      τ' = ∂τ/∂α.
//
// Σ_j ∂p_j/∂α = 0 gives τ' = (Σ_j g_j z_j − Σ_j p_j log p_j)/Σ_j g_j, and
// with g_j z_j = (p_j + g_j τ)/β and p̃ = g/Σg this becomes Proposition 2 of
// Correia et al.:
//
//	∂p_j/∂α = (p_j − p̃_j)/β² − (p_j log p_j − p̃_j·Σ_k p_k log p_k)/β,
//
// so per query row ∂L/∂α = (Σ dp·p − Σ dp·p̃)/β² − (Σ dp·p log p −
// (Σ p log p)(Σ dp·p̃))/β, summed over the rows of the head. It reaches
// alpha_raw through the sigmoid: ∂α/∂alpha_raw = (α−1)(2−α). The tests check
// both against central differences (per row and through the whole mixer).
//
// # Memory and work
//
// Queries are processed in blocks of R = 64 rows per (batch, head): one GEMM
// gives the R×n score block (n = T, or the block's last row + 1 when causal),
// each row is normalised in place, and then
//
//   - if the block's support fits in R·C entries (C = SupportCap = 64), the
//     support (key index, p) of every row is kept in act and y_i = Σ p_j v_j
//     is gathered; backward computes dp_j = dout_i·v_j only on the support
//     and accumulates dq, dk, dv in O(support·Dh), recomputing nothing;
//   - otherwise y = P·v by GEMM, only τ and the normaliser are kept, and
//     backward recomputes the block's scores (one GEMM) and runs the dense
//     FlashAttention-style backward on it.
//
// act is 4·B·T·D (q, k, v, head outputs) + 4·B·H·T row statistics +
// 2·B·H·T·C support entries: linear in T. The trade-off: a row block whose
// mean support exceeds C pays a recomputation instead of storing more, so
// early in training (near-uniform attention, support ≈ T) entmax costs about
// as much as full attention and later, as heads go sparse, backward becomes
// O(T·support·Dh). Scratch is 6·B·T·D (dq, dk, dv, dy and per-head
// transposed copies of k and v, so that the block GEMMs pack contiguous
// rows) plus, per thread, two R×T blocks and two private T×Dh dk, dv
// accumulators for a head shared with another thread.
//
// Shapes: B batch, T time, D channels, H heads, Dh = D/H.
//
// Under "precision": "bf16" the projections and the block score and value
// products multiply in bf16; the threshold search, the probabilities and
// the α gradient stay float32.
package entmax
