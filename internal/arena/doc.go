// Package arena trains every registered token mixer side by side on one task
// — the same model size, data and settings, a budget per mixer and one or
// more seeds — and reports test metric, speed and memory as JSON, CSV, a
// Markdown table and PNG plots.
//
// It is a small, CPU-sized version of the Long Range Arena (Tay et al. 2021,
// "Long Range Arena: A Benchmark for Efficient Transformers"). A Preset
// (internal/configs/*.json) names the task (package data), the model
// dimensions, the optimiser settings and the budget: a step count per mixer
// (the built-in presets), or training time per mixer (package train turns
// it into a step count and replans it from the pace). With step budgets a
// run's figures depend only on the preset, the seed, the thread count and
// the kernel path, which results.json records with the CPU's name. Run i of
// a mixer trains with train.seed + i; tables give the mean and the range
// over the seeds, and a margin no wider than the ranges is not called a
// win. Each run trains with train.Run. Mixers that cannot run the task (a
// non-causal kind on next-token prediction) are reported as skipped.
// References are printed with the mixers: lookup tables for ListOps,
// compressors for gosrc, and for Fashion-MNIST a logistic regression and an
// MLP on the pixels, trained here on the same split.
//
// Everything a run needs to resume lives in the arena directory: the resolved
// preset (arena.json), and per run runs/<kind>/ (first seed) or
// runs/<kind>.s<i>/ (seed i ≥ 1), a run directory (package run) plus
// job.json and, once finished, result.json. Running the same arena again
// skips finished runs and continues interrupted ones from their newest
// checkpoint (same data order: the loader seeks to the step); it may ask
// for more seeds than before.
//
// Presets and the arena's own files (arena.json, job.json, result.json,
// results.json) are read once, strictly, into typed structs with package
// strict: a null, an unknown key, a wrong type or a value out of range is
// an error naming its key (model.d_model, train.lr, task.len). Each run's
// model config is a model.Config built from the preset's model and train
// objects and checked by model.Config.Resolve; the task reads its own keys
// when it is built.
package arena
