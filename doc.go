// Package tokenmix is the Go API of tokenmix: train a model (Train), load
// a run directory or an exported model (Load, LoadFS), then classify,
// score, generate, chat, tag spans, embed or read the logits of token
// sequences.
//
//	m, err := tokenmix.Load("run")                  // newest checkpoint of a run
//	preds, err := m.Classify(ctx, [][]int32{m.Encode("claim your free prize")})
//	fmt.Println(preds[0].Name, preds[0].Probs)      // label name and class probabilities
//
// Text is bytes (Encode maps each byte to its id 0–255) unless the model
// has a tokenizer, whose ids Encode gives. Classify needs a
// classifier (task "classify"), Score a causal language model; Logits
// works for both. Every call validates its input first: an empty sequence,
// one longer than max_len, a token outside the vocabulary or the wrong
// task is an error naming the sequence and the limit, never a panic.
// Results come in fresh memory and do not depend on how sequences are
// batched beyond float32 rounding: padding changes nothing a position
// sees, but a batch may round differently (a matrix product of one short
// sequence sums in another order than a batch's), so each logit agrees
// with the one computed alone to within 1e-6·max(1, |the sequence's
// largest logit|).
//
// A Model is safe for concurrent use by many goroutines. Its weights are
// loaded once; calls on one model run one forward pass at a time (it has
// one workspace), each on the model's threads (WithThreads), while calls
// on different models run at the same time, each on its own threads and
// with the results it would give alone. A cancelled context ends a call
// between layers.
//
// Besides classifiers and lms, a tagger (task "tag") finds labelled
// spans with byte offsets (Tag), an embedder (task "embed") gives unit
// vectors whose dot products are cosine similarities (Embed), and a
// causal lm trained on conversations answers them through its chat
// template (Chat).
//
// A causal lm also generates: NewStream keeps one sequence's decoding
// state (a key–value cache for attention, per-bucket caches for LSH,
// running sums for AFT: constant time per token for aft_simple), Generate
// samples from it with temperature, top-k, top-p, a seed and stop
// sequences, and StepStreams steps many streams in one pass over the
// weights. StartGeneration and StepGenerations take Generate a token at a
// time, so that a server steps many generations together and draws the
// tokens Generate would (`tokenmix serve` does).
//
// Train trains on a Dataset: examples in memory (Examples), JSONL or text
// files (JSONLFile, TextFiles), a task of the task list (TaskData) or a
// stream (FromSeq, or any type with a Next method), with a TrainConfig
// whose zero fields it infers from the data; it resumes runs, fine-tunes
// them (WithInit, WithFreeze) and is the loop of the command `tokenmix
// train` (docs/training.md).
//
//	r, err := tokenmix.Train(ctx, tokenmix.TrainConfig{}, tokenmix.Examples(ex), tokenmix.WithOutDir("run"))
//	m, err := r.Model()
//
// Package mixer defines the token-mixer interface and package
// mixer/registry lists the kinds; a kind a program adds there trains
// through Train like a built-in one.
package tokenmix
