// Package lsh is Reformer's locality-sensitive-hashing attention (kind
// "lsh"): each query attends only to keys that hash to its bucket, so time
// and memory grow as T·bucket_size·n_hashes instead of T².
//
// Paper: Kitaev, Kaiser, Levskaya, "Reformer: The Efficient Transformer",
// ICLR 2020, Sec. 2 (LSH attention, multi-round hashing, shared-QK).
//
// # Turning it on
//
//	"mixer": {"kind": "lsh", "bucket_size": 64, "n_hashes": 4}
//
// bucket_size (int ≥ 2, default 64) is the chunk length; n_hashes (int in
// [1,64], default 4) is the number of hash rounds. "rope": true (with
// "rope_base", default 10000) rotates the shared qk by its positions
// (attn.Rope) right after the projection, so the hash and the scores both
// see rotated vectors. All are validated strictly; any other key is an
// error.
//
// # Equations
//
// Shapes: B batch, T time, D channels, H heads, dh = D/H (heads are
// contiguous channel groups), R = n_hashes, NB = n_buckets.
//
//	s = x·W_qkᵀ + b_qk              [B,T,D]  shared query/key
//	v = x·W_vᵀ + b_v                [B,T,D]
//	q_i = s_i,  k_j = s_j/‖s_j‖     per head; queries are not normalised
//	z_ij = q_i·k_j/√dh              (Reformer normalises keys only; we keep
//	                                 the usual 1/√dh so the logit scale matches
//	                                 full attention at initialisation)
//
// Hashing (per round r and head h): a random rotation R_rh [dh, NB/2] with
// approximately N(0,1) entries from a counter-based generator keyed by
// (Pass.Seed, layer, r, h) (Rotation; docs/model.md, "LSH rotations", so
// that other implementations draw the same bits) — independent of call
// order, so Backward (and a reversible model's recomputation) replays it
// exactly —
//
//	bucket_r(i) = argmax([s_i·R_rh ; −s_i·R_rh])     (first maximum on ties)
//	NB = 2·max(1, ⌊T/(2·bucket_size)⌋)
//
// NB is T/bucket_size rounded down to an even number, at least 2; when T is
// not a multiple of 2·bucket_size the average bucket is a little larger than
// bucket_size (never smaller), and the last chunk of each bucket is short.
//
// Windows (per round): tokens are sorted by (bucket, position) and each
// bucket's run is cut into chunks of bucket_size. Query i attends to the keys
// of its own chunk and of the previous chunk of the same bucket; in the
// bidirectional case the first chunk of a bucket wraps around to the
// bucket's last chunk (Reformer's look-one-back with wrap-around). Call this
// set P_i^r. Then:
//
//   - causal: keys j > i are excluded; key padding: padded tokens are never
//     hashed, so they are in no window (and a padded query's attention output
//     is 0);
//   - a token does not attend to itself unless it has no other allowed key in
//     any round (then it attends only to itself: out_i = v_i);
//   - duplicates: a key found in N_ij rounds has log N_ij subtracted from its
//     logit in each (Reformer eq. 7), so the rounds together weigh it once.
//
// With lse_r(i) = log Σ_{j∈P_i^r} exp(z_ij − log N_ij) and o_r(i) the
// round's softmax average of v, the rounds are combined as
//
//	out_i = Σ_r exp(lse_r(i) − logsumexp_r lse_r(i)) · o_r(i),
//
// which equals a single softmax over the union of the windows with the
// duplicate correction. The kernel computes it that way: one running
// (max, sum, accumulator) per query across chunks and rounds, storing only
// L_i = logsumexp_r lse_r(i). The result goes through o (y = out·W_oᵀ + b_o,
// residual init).
//
// Backward recomputes the buckets from the saved s and Pass.Seed, then per
// chunk recomputes P_ij = exp(z_ij − log N_ij − L_i) and applies
//
//	dv_j += Σ_i P_ij·g_i,   dz_ij = P_ij·(g_i·v_j − g_i·out_i),
//	ds_i += Σ_j dz_ij·k_j/√dh,   dk_j += Σ_i dz_ij·q_i/√dh,
//	ds_j += (dk_j − k_j·(k_j·dk_j))/‖s_j‖                  (key normalisation)
//
// where g = dout·W_o. Bucket assignments are piecewise constant, so they
// carry no gradient (finite differences agree as long as no argmax flips).
//
// # Deviation from the paper: chunks never cross buckets
//
// Reformer chunks the globally sorted sequence, so a chunk can straddle two
// buckets and the chunk a token lands in depends on how many tokens —
// including future ones — hash to lower buckets. That leaks the future into
// causal attention (which keys a past query sees changes when a future token
// changes) and lets padded tokens shift the windows of real ones. Here each
// bucket is chunked on its own: a token's chunk depends only on the earlier
// tokens of its bucket, so the layer is exactly causal and padding-invariant,
// as the tokenmix conformance suite requires. The price: a query never looks
// into a neighbouring bucket, and a bucket with a single chunk and no wrap
// partner only sees itself. Chunks per round are at most T/bucket_size + NB.
//
// # Memory and cost
//
// Activations: 3·B·T·D (s, v, pre-projection output) + B·H·T (L). Scratch:
// 3·B·T·D for gradients plus, per thread, O(T·(dh + R) + bucket_size²).
// Nothing is T×T. Work is parallel over (batch, head) items; each item runs
// its rounds and chunks on one goroutine with single-threaded GEMMs.
//
// Time per layer: the projections (4·T·D² per sequence, as for full
// attention), the windows (about 2·T·2·bucket_size·D per round forward, twice
// that backward), and the hashing (T·D·NB/2 per round, i.e. T²·D/(2·
// bucket_size) — quadratic with a small constant, done twice since backward
// re-hashes).
//
// # Trade-offs, frankly
//
//   - LSH pays off only for long sequences: with the defaults (bucket_size 64,
//     4 rounds) a query scores 4·128 = 512 keys, so below T ≈ 1–2k full
//     (exact, tiled) attention does the same work or less and is exact.
//   - It is an approximation: a key whose direction is close to the query
//     but hashes elsewhere in every round is missed. More rounds cost
//     linearly and reduce misses (see TestDominantKey: 1 round ≈ 55% error,
//     8 rounds ≈ 0 on near-duplicate pairs).
//   - Shared QK means a token's best match is itself, hence the self rule;
//     attention patterns that want q and k to differ (e.g. "previous
//     token") are harder to learn.
//   - The rotations change with Pass.Seed, so the model sees different
//     windows each step (a regulariser); evaluation should fix the seed.
//   - Backward re-hashes instead of storing buckets: the hashing is paid
//     twice, but the saved state is O(B·T·D), independent of R. Re-hashing
//     the same s is exact. In a reversible model, however, the block input
//     is reconstructed up to rounding before the mixer is recomputed, and a
//     token whose argmax is a near-tie can land in another bucket than in
//     the forward pass; its window then differs and the reconstruction of
//     the layer below is off for the tokens it affects. Trax avoids this by
//     keeping the forward's buckets; here it is left as a known, rare
//     effect (not observed in the float32 12-layer tests at initialisation).
//
// # Speed
//
// scripts/bench_lsh.py and the Benchmark* functions in lsh_test.go time one
// float32 layer forward+backward at D=256, 4 heads, B=1, causal, default
// options, against full attention at T=2048 and T=8192; docs/performance.md
// records the results.
//
// # Precision
//
// Under "precision": "bf16" the shared qk projection stays float32 (the
// buckets are hashed from it, and a rounded qk would move tokens between
// buckets; the hashing itself is float32 too); the v and o projections and
// the chunks' score and value products run in bf16.
package lsh
