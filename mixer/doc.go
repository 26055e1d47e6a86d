// Package mixer defines the token-mixer interface that every attention and
// attention-free layer of tokenmix implements, and the small types they share:
// parameter specs, per-call pass information and strict option parsing.
//
// A mixer maps x [B,T,D] (the output of the block's first LayerNorm) to
// out [B,T,D]. Its forward keeps whatever it needs for backward in an
// activation buffer whose size it declares up front (ActSize), and uses a
// temporary workspace of declared size (ScratchSize), so the model computes
// its whole memory plan before running. Backward accumulates (+=) into dx and
// into the parameter gradients.
//
// Threads are given per call: Pass.Threads (and the threads argument of
// ScratchSize, Decode, DecodeBatch and UseBF16) is the call's thread budget,
// which the model sets to its own (tokenmix.WithThreads), 0 standing for
// the process default (Budget). A mixer splits its work by that budget
// alone, so passes of different models run at the same time on different
// threads, and a result does not depend on what else runs.
//
// The implementations live in the module's internal/mixer packages (full,
// sparse, entmax, topk, lsh, aft, fnet), each of the same shape: Kinds()
// returns its registry entries (one Kind per mixer kind it defines), and
// New[F](Config) builds the mixer of Config.Opts.Kind, returning the
// package's engine (attn.Attention for full and sparse, which differ only in
// their Pattern; entmax.Attention and topk.Attention on the shared row-rule
// engine attn.RuleAttention; lsh.LSH, aft.AFT, fnet.FNet). The attention-like
// kinds share their q/k/v/o projections (package proj). The one explicit
// list of kinds is package mixer/registry. Describe lists the options a
// kind accepts.
package mixer
