// Package data holds tokenmix's tasks, windows and metrics: deterministic,
// seeded datasets with train, validation and test splits behind one Task
// interface, the shared batching that turns examples into padded [B,T]
// token batches, the one windowing of byte-level text (Windows: random,
// fixed and sliding windows), the one evaluator (Evaluate) and the one
// softmax, log-softmax and argmax on logits.
//
// The task list (Tasks, LookupTask, NewTask) names every built-in task
// once; the arena, `tokenmix train --task`, `tokenmix eval --task` and
// `tokenmix data export` build tasks through it. Every error about a task's
// config names its key: a KeyError reads "recall.values: …" from the
// constructor and "task.values: …" from NewTask, the key's path in a
// preset. See each constructor's doc for a task's exact definition:
//
//   - listops: LRA's ListOps (Tay et al. 2021, "Long Range Arena", after
//     Nangia & Bowman 2018), nested [MIN/[MAX/[MED/[SM expressions over the
//     digits 0–9; classify the value (10 classes).
//   - fmnist: sequential Fashion-MNIST (Xiao et al. 2017), 784 pixel tokens
//     (vocab 256), 10 classes, read from IDX files.
//   - gosrc: byte-level language modelling on the Go standard library's
//     source; the metric is bits per byte, next to gzip -9 and xz -9e.
//   - recall: synthetic associative recall (key–value pairs, then a query
//     key; predict its value) at any length.
//   - pathfinder: LRA's Pathfinder (Linsley et al. 2018), drawn by our own
//     generator at any side² length: are two markers joined by one dashed
//     contour among distractors? Pixel tokens (vocab 256), 2 classes.
//
// A classification example has one target, the class. A language-modelling
// example has one target per token, −1 meaning "no target"; the metric is
// either bits per byte (mean cross-entropy over targets / ln 2) or the
// accuracy over the targets.
//
// Shapes: B batch, T time. Batch.Tokens is [B,T] row-major; Batch.Targets is
// [B] for classification and [B,T] for language modelling.
package data
