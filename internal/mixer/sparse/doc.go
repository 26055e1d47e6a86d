// Package sparse is the Sparse Transformer's factorized attention (kinds
// "strided" and "fixed") on block-sparse kernels whose cost is proportional
// to the number of allowed query–key pairs, not to T².
//
// Paper: Child, Gray, Radford & Sutskever 2019, "Generating Long Sequences
// with Sparse Transformers" (arXiv:1904.10509), Sections 4.2–4.3.
//
// # Index sets
//
// Query i, key j, 0-based; l is option "block", c is option "summary".
//
//	pattern                  A1(i)                A2(i)
//	strided, causal          i − l ≤ j ≤ i        (i − j) mod l = 0 and j ≤ i
//	strided, bidirectional   |i − j| ≤ l          (i − j) mod l = 0
//	fixed                    ⌊j/l⌋ = ⌊i/l⌋        j mod l ≥ l − c
//
// For fixed with causal both sets also require j ≤ i. Every query also
// attends to itself (j = i is always allowed). Keys holding pad_id are
// excluded, as in full attention; a query whose allowed keys are all padding
// (possible only for a padded query) outputs o(0) = bo.
//
// Within the allowed set, per head h with Dh = d/n_heads,
//
//	p_h = softmax(q_h·k_hᵀ/√Dh over allowed keys),  out = o(concat_h p_h·v_h),
//
// with the same q, k, v, o projections and weight names as full attention.
//
// # Combination
//
//   - "heads": heads 0 … n_heads/2 − 1 use A1, the others A2 (the paper's
//     multi-head attention, eq. 6). n_heads must be even.
//   - "merge" (the default): every head uses A1 ∪ A2 (eq. 5).
//   - "interleave": layers 0, 2, 4, … use A1 and layers 1, 3, … use A2, for
//     all heads (eq. 4).
//
// # Kernels and cost
//
// Each (pattern, T, causal, tiles) gets a block layout (package mixer/attn),
// built once and cached: tiles of queries × keys listing only tiles that
// hold an allowed pair, with a bit mask inside partial tiles. A1 is a band
// (strided; l/2-query × 64-key tiles, so about 1.5·l scores per query for
// l + 1 pairs) or block-diagonal (fixed). Strided A2 uses the transpose
// trick: in the order grouped by residue class i mod l, A2 is dense causal
// (or dense) attention over ⌈T/l⌉ positions; a class is read with row stride
// l·d, and the kernels keep k and v transposed in residue-class order so its
// keys are contiguous. Fixed A2 gathers the T·c/l summary keys into compact
// copies once per pass, so they form one dense key axis, tiled 128 queries ×
// 64 summary keys along the staircase j ≤ i. With merge, A2 skips pairs
// already in A1, so a pair is never counted twice in one softmax. The pair
// j = i, where it is outside A2 (fixed's non-summary positions), is a
// diagonal block. The forward pass runs the online softmax over the listed
// tiles; backward recomputes them (see mixer/attn). Time per head is
// O(scores·Dh), with scores within 2× of the allowed pairs
// (TestCostFollowsPairs):
//
//	strided: A1 ≈ T·l pairs, A2 ≈ T²/(2l) (causal) → O(T·√T) with l ≈ √T
//	fixed:   A1 ≈ T·l/2 pairs, A2 ≈ T²·c/(2l) (causal)
//
// Memory is O(T·d) activations per layer plus the layout, never T×T.
//
// # Choosing l and c
//
// Take l ≈ √T (e.g. l = 32 at T = 1024, l = 64 at T = 4096, l = 128 at
// T = 16384): strided then costs about 2·T·√T pairs per head instead of T².
// A query reaches any earlier position in two hops (one through A1, one
// through A2), so every combination needs at least two layers for full
// connectivity. c trades cost for bandwidth through the
// summary positions: fixed's A2 grows like T²·c/l, so keep c/l small; the
// paper uses c ∈ {8, 16, 32} with l ∈ {128, 256}. Strided suits data with
// periodic structure (images, audio, where l is the row length); fixed suits
// text, which has no period.
//
// # Turning it on
//
//	{
//	  "vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 4,
//	  "d_ff": 1024, "max_len": 4096, "causal": true, "task": "lm",
//	  "mixer": {
//	    "kind": "fixed",
//	    "block": 64,
//	    "summary": 8,
//	    "combine": "heads"
//	  }
//	}
//
// For strided, use "kind": "strided" and drop "summary" (an error there).
// Options are validated: block ≥ 1; for fixed 1 ≤ summary ≤ block; combine
// is one of the three modes; "heads" with odd n_heads is an error.
// "alibi": true adds the ALiBi bias −m_h·|i−j| to the allowed scores, or
// "rope": true (with "rope_base", default 10000) rotates q and k by their
// positions, as for full attention (see package full); the pattern is
// unchanged.
package sparse
