// Package model is tokenmix's Transformer: the config, the parameter slab
// with the contract's weight names, GPT-2 initialisation, a flat llm.c-style
// forward and accumulating backward over pre-LN blocks, both heads and their
// losses, the single memory plan, gradient checkpointing, the trainer and
// resumable run checkpoints. The contract (config keys, equations, weight
// names) is docs/model.md; scripts/torch_reference.py implements the same
// contract in PyTorch and the parity test compares the two.
//
// Forward (B batch, T time, D = d_model, H = d_ff, V head width):
//
//	x = embed[tokens] + pos[0:T]                         [B,T,D]
//	for each block i:
//	    x = x + mixer_i(LN1_i(x))
//	    x = x + fc2_i(GELU_tanh(fc1_i(LN2_i(x))))
//	h = LN_f(x)
//	lm:       logits = h·Wᵀ + b                          [B,T,V]
//	classify: logits = (Σ_{t not pad} h_t / n)·Wᵀ + b    [B,V]
//	loss = mean over targets ≠ −1 of −log softmax(logits)[target]
//
// With dropout p, a training forward (Train) multiplies each branch output
// (mixer_i(…) and fc2_i(…)) by a mask/(1−p) regenerated from the step's
// seeds in backward (dropout.go).
//
// Backward runs the same sequence in reverse. Every layer function
// accumulates into its input and parameter gradients; the residual stream's
// gradient dres is updated in place (each branch adds its contribution), so
// residual fan-in needs no extra code. ZeroGrad is the one explicit reset.
//
// Memory: parameters and their gradients live in two slabs laid out in
// Specs order; activations and activation gradients live in two slabs whose
// layout is the Plan of (config, B, T), computed in one place (newPlan) from
// the config and each mixer's ActSize and ScratchSize. With checkpoint:true
// only block inputs are kept and each block is recomputed in backward
// (bitwise the same gradients); with ff_chunks > 1 the feed-forward's
// d_ff-wide activations are never materialised for all rows. A
// token-level task's forward with targets runs the head in row chunks
// (headTargets), in training with its backward, so the [B,T,V] logits and
// their gradient are never materialised either; only a forward without
// targets keeps logits, on a plan of its own (ForwardPlan) that keeps no
// activations for a backward.
//
// The float64 instantiation is the gradient-check path (finite differences
// in the tests); float32 is the fast path. A float32 model follows the
// config's precision: "bf16" runs every matrix product on bf16 operands
// (kernels.Gemm in PrecBF16; the mixers through mixer.Config.Precision), "fp16" rounds
// what it keeps to IEEE half (store) and trains with dynamic loss scaling
// (Trainer.Scale), and both keep fc1's d_ff-wide output in a third,
// 16-bit slab (Plan.HalfElems), recomputing GELU from it in backward.
// In bf16 the feed-forward runs by blocks of rows while they are in cache:
// forward, fc1's output is rounded and kept and GELU's written in bf16
// (ffSaveFused); backward, dg = dout·W2 and dh = GELU'(h)·dg are made a
// block at a time and rounded straight to the packed forms fc1's backward
// multiplies, and the same blocks recompute GELU's output from the h they
// widened into the pair layout fc2's weight gradient reads
// (ffBackwardBF16, kernels.LinearBackwardFill). In bf16
// inference (UseBF16) a forward-only pass runs fc1, GELU and fc2 a block
// of rows at a time (ffForwardBF16), so the hidden activations never go
// to memory. Each is bit for bit the unfused computation.
package model
