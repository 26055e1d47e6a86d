// Package onnx writes a tokenmix model's inference forward as one ONNX
// file (`tokenmix export --format onnx`): input tokens [batch, seq] int64,
// output logits, batch and sequence length dynamic up to max_len. The
// file declares IR version 8 and opset 17 of the default domain (the first
// opset with LayerNormalization and DFT), which ONNX 1.12's checker and
// ONNX Runtime from 1.13 on accept. docs/onnx.md is the user's page.
//
// # How it is written
//
// A hand-written encoder of the few onnx.proto messages a model needs
// (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto and its type and shape, OperatorSetIdProto,
// StringStringEntryProto), about 100 lines of protobuf wire format in
// proto.go. Generated code from onnx.proto with google.golang.org/protobuf
// would add a module dependency and several thousand generated lines to
// read five messages' worth of fields, and the wire format of these
// messages has been stable since IR version 3. The tests read the files
// back at the protobuf level, ONNX's own checker accepts them, and ONNX
// Runtime runs them.
//
// # The graph
//
//	x = Gather(embed.weight, tokens) + Slice(pos.weight, 0, T)
//	per block: x += mixer(LayerNormalization(x)); x += fc2(GELU_tanh(fc1(LayerNormalization(x))))
//	h = LayerNormalization(x)
//	lm, tag:        logits = h·headᵀ + b                      [batch, seq, V]
//	classify, embed: logits = pool(h)·headᵀ + b               [batch, n_classes or d_model]
//
// T is read from the input's shape. Linears are MatMul and Add with the
// weight stored transposed ([in, out]) under its tokenmix name; the tanh
// GELU is written out (Tanh, Mul, Add: opset 17 has no Gelu). With pad_id,
// the padding mask is Equal(tokens, pad_id) inside the graph; mean pooling
// divides by the non-pad count (at least 1); an embedder's logits are its
// head's output, which Model.Embed normalises.
//
// # Mixers
//
// Each kind with a rule (rules in mixers.go) writes its layer from the
// model's tensors; a kind added through registry.Add has no rule and is
// refused by name. Reversible blocks are their two streams and their mean.
//
//   - full: per head Softmax(q·kᵀ/√dh + bias) with Where masks (causal
//     LessOrEqual on Range offsets, key padding), a query with no allowed
//     key zeroed; ALiBi as −m_h·|i−j| from the offsets; RoPE with cos and
//     sin tables of max_len rows (Slice to T) and "rotate half" by Slice
//     and Concat.
//   - strided, fixed: full attention under the pattern's mask, built from
//     the offsets (every score computed, the disallowed dropped: O(T²)).
//   - topk: the scores at least the k-th largest (TopK, ties kept).
//   - entmax: p = Relu(β·s − τ)^(1/β) with τ by 40 unrolled bisection steps
//     and p normalised; learned α from alpha_raw.
//   - lsh: full attention with the shared qk and unit keys under the
//     union of the rounds' windows: buckets by ArgMax over the rotations
//     (constants of the pass seed, one set per bucket count up to max_len,
//     picked by the length), chunks from each token's rank in its bucket.
//   - aft_simple: E = Exp(K − ReduceMax K) over the non-pad keys; totals by
//     ReduceSum or, causal, prefix sums by CumSum. Go's causal kernel
//     rescales by a running maximum instead: the two agree unless a
//     channel of K spans more than float32's exponent range (≈ 80) within
//     a sequence.
//   - aft_full, aft_local: the weights exp(w − max w) as a T×T matrix, w
//     from pos_bias (Slice), 0 beyond aft_local's window or excluded
//     ("distant": false), then MatMul with E⊙V and E: O(T²) where Go's
//     aft_local band kernel is O(T·window).
//   - aft_conv: depthwise Conv over time (a group per channel, the head's
//     taps reversed) of E⊙V and E, plus the distant keys' sums weighted by
//     e^{−M} on rows that have such keys: Go's band formula with a per-head
//     shift M instead of a per-row one (equal unless a head's taps span
//     more than ≈ 80).
//   - fnet: C_T·x·C_D − S_T·x·S_D as four MatMuls: C_D and S_D constants,
//     C_T and S_T built from Range, Mod and Cos/Sin of 2π(j·k mod T)/T, so
//     the length stays dynamic. The DFT operator needs a complex trailing
//     axis and two transforms; the matrix form is what ONNX Runtime runs as
//     plain GEMMs.
//
// # Precision
//
// float32 throughout; with Options.F16 the weights are stored as float16
// and cast to float32 in the graph (half the file, the same arithmetic).
// A model whose weights pass protobuf's 2 GiB limit keeps them in an
// external data file beside the model (File.Data): every tensor of 1 KiB or
// more, 64-byte aligned, as ONNX's own writer lays it out.
package onnx
