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
// The implementations live in the module's internal/mixer packages (full,
// sparse, entmax, topk, lsh, aft, fnet); the one explicit list of them is
// package mixer/registry. Describe lists the options a kind accepts.
package mixer
