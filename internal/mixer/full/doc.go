// Package full is full multi-head softmax attention (kind "full"), the
// baseline every efficient mixer is compared with.
//
// Paper: Vaswani et al. 2017, "Attention Is All You Need". Per head h, with
// q = x·Wqᵀ + bq (likewise k, v), Dh = d/n_heads and head h the channels
// [h·Dh, (h+1)·Dh):
//
//	p_h = softmax(q_h·k_hᵀ/√Dh)  over allowed keys,
//	out = o(concat_h p_h·v_h).
//
// Allowed keys: j ≤ i when the model is causal; keys whose token is pad_id
// are excluded. A query with no allowed key (possible only for a padded
// query) outputs o(0) = bo.
//
// The kernel is memory-efficient exact attention (package mixer/attn): 128×64
// tiles of queries × keys (128×128 in bf16) with an online softmax, recomputed in backward, so
// activation memory is O(T·d) per layer, never T×T; time is O(T²·d). A naive
// materialised twin (NewNaive) is its test oracle.
//
// Turn it on in a model config:
//
//	{
//	  "vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 4,
//	  "d_ff": 1024, "max_len": 1024, "causal": true, "task": "lm",
//	  "mixer": {"kind": "full"}
//	}
//
// # ALiBi
//
// Option "alibi": true (default false) adds the position bias of ALiBi
// (Press et al. 2022, "Train Short, Test Long: Attention with Linear Biases
// Enables Input Length Extrapolation") to the scaled scores, in its
// symmetric form for bidirectional models:
//
//	p_h = softmax(q_h·k_hᵀ/√Dh − m_h·|i − j|),  m_h = 2^(−8(h+1)/n_heads),
//
// so with 4 heads the slopes are 1/4, 1/16, 1/64 and 1/256: every head
// prefers nearby keys, at its own range, from the first step. It has no
// parameters and nothing to learn; backward is unchanged because the bias is
// a constant (dS = P ⊙ (dP − rowsum)). The kernels add it to each score tile
// before masking, one slice of a per-length table by offset per tile row
// (attn.ALiBiSlopes): one addition per score, small next to the score GEMM.
// The model's learned absolute positions stay.
//
// # RoPE
//
// Option "rope": true, with "rope_base" (default 10000), rotates q and k by
// their positions after the projections (Su et al. 2021, "RoFormer:
// Enhanced Transformer with Rotary Position Embedding"; attn.Rope states
// the convention). A rotation by pθ is orthogonal, so
//
//	(R_i q_i)·(R_j k_j) = q_i·R_{j−i} k_j
//
// depends on the positions only through j − i. The kernels then see rotated
// q and k, and act keeps them rotated; backward rotates dq and dk back (the
// transpose) before the projections' backward, and decoding rotates each
// new query and key at its absolute position before the key joins the
// cache. RoPE and ALiBi are exclusive.
//
// Any other key besides "kind" is an error.
package full
