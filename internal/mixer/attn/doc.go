// Package attn holds tokenmix's attention engines: the memory-efficient
// exact softmax kernels (Attention) shared by full attention (mixer/full)
// and the Sparse Transformer (mixer/sparse), and the row-rule engine
// (RuleAttention, rule.go) on which α-entmax (mixer/entmax) and top-k
// (mixer/topk) apply their Rule to the scores.
//
// Attention per head, with scale = 1/√Dh and A(i) the keys query i may see
// (the head's Pattern minus padded keys):
//
//	S_ij = scale·q_i·k_j,   P_ij = exp(S_ij − lse_i) for j ∈ A(i), else 0,
//	lse_i = log Σ_{j∈A(i)} exp(S_ij),   o_i = Σ_j P_ij v_j.
//
// A query with no allowed key gets o_i = 0 (lse_i = +Inf).
//
// The forward pass never materialises S or P (Rabe & Staats 2021, "Self-
// attention does not need O(n²) memory"; Dao et al. 2022, FlashAttention).
// Queries and keys are visited in blocks listed by a Layout; for each block
// the kernel computes an NQ×NK score tile with one GEMM, and updates a running
// row maximum m_i, row sum l_i and unnormalised output (the online softmax):
//
//	m' = max(m, max_j S_ij),  l = l·e^{m−m'} + Σ_j e^{S_ij−m'},
//	o = o·e^{m−m'} + Σ_j e^{S_ij−m'} v_j.
//
// It saves q, k, v, o and lse: O(T·D) memory. Backward recomputes each tile
// from q, k and lse (FlashAttention-2, Dao 2023):
//
//	D_i = Σ_c dO_ic·O_ic,  dP = dO·vᵀ,  dS = P ⊙ (dP − D_i),
//	dq += scale·dS·k,  dk += scale·dSᵀ·q,  dv += Pᵀ·dO.
//
// A Layout is a list of phases; a phase is a list of groups with disjoint
// query rows (the unit of parallel work in forward); a group is a list of
// blocks. A block's rows and columns are arithmetic progressions of
// positions, so the Sparse Transformer's strided keys (i, i−l, i−2l, …) are a
// dense block in permuted order (OpenAI's transpose trick) read with row
// stride l·D, without gathering. Keys may also index a layout's Gather list
// (the fixed pattern's summary positions), read from compact gathered copies.
// Score GEMMs read keys from per-head transposed copies of k and v (see
// transpose.go), kept in 64-column panels where every contiguous block
// fits one (full attention); the other tile products read rows of v, k, q
// and dO from head-major copies [B,H,T,Dh] (heads.go). Both are the GEMM's
// packed layout for heads of 16 to 64 channels, so those products read
// their B operand in place rather than packing it for every tile. With
// heads of at most 32 channels, backward accumulates dKᵀ and dVᵀ, whose
// products run on the full-width micro-kernels. A tile's row passes (the
// online-softmax step, P = exp(S − lse), dS, the scaling of output rows)
// are one kernels call per tile (kernels.OnlineSoftmax and its siblings).
// Partial blocks carry a bit mask, and drop their leading and trailing rows
// that allow no key (a causal tile computes no row above the diagonal). The
// work is therefore proportional to the number of visited pairs times Dh,
// not T².
//
// Parallelism: the forward pass runs phase by phase; within a phase the
// units are (batch, head, group), pulled dynamically by the workers of the
// pass's thread budget (mixer.Pass.Threads), each with two score tiles from
// the declared scratch. Backward
// units are (batch, head) pairs (a unit owns its head's dq, dk, dv), sorted
// by cost; with fewer pairs than threads some threads idle there. Every
// row's arithmetic is independent of the worker that runs it, so float32
// results do not depend on the thread count.
//
// Shapes: B batch, T time, D channels, H heads, Dh = D/H; head h is the
// contiguous channel group [h·Dh, (h+1)·Dh).
//
// Precision: under "precision": "bf16" (a float32 mixer) every score and
// value product multiplies bf16 operands with float32 sums; softmax, its
// online normaliser and the row statistics stay float32. Attention packs
// each (batch, head)'s q, k, v (and in backward dO) in bf16 once per pass
// (headPacks), so a tile product packs only its fresh score tile: from
// the stored bf16 bits (Storage, below), which the queries' products read
// in place and the other layouts pair or transpose without rounding, and
// dO rounded once into its rows; the projections' input is packed once
// for q, k and v, and o's stored rows are read in place. A covered
// tile's P goes from the exps straight into bf16 (forward:
// kernels.OnlineSoftmaxBF16; backward, with dS and its packs:
// kernels.ExpSubMulPackBF16), never stored in float32. Blocks
// the packs do not cover (strided or gathered keys) pack per tile
// (kernels.Gemm on one thread), with bitwise the same result. Where the
// kernels' bf16 path widens bf16 values to float32 anyway
// (kernels.BF16Widens: avx512fma, avx2fma), nothing is packed: q, k and v
// already hold bf16 values (Storage, below), backward rounds dO in place
// once the row sums D_i have read it, each tile rounds P and dS in place
// after dS is formed, and the products run in float32 (dims.round), again
// with bitwise the same result (TestBF16Packed).
//
// Positions: with a Rope (options "rope", "rope_base"), Attention and
// RuleAttention rotate q and k right after their projections, so act and
// every kernel see rotated vectors; Backward rotates dq and dk back before
// the projections' backward, and decoding rotates each new row at its
// absolute position. With 16-bit storage the rotated values are the ones
// rounded.
//
// Storage: under "bf16" and "fp16" (a float32 mixer) the activations keep
// q, k, v and o [B,T,D] as 16-bit values (bf16 or IEEE half), two per
// float32 element of act. Forward rounds q, k and v to the format before
// the core reads them, and o before the output projection; Backward reads
// them back into float32 copies in its scratch, so both passes see the
// same values. In fp16 the products stay float32.
package attn
