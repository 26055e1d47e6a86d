// Package arena trains every registered token mixer side by side on one task
// — the same model size, seed, data order and budget — and reports test
// metric, speed and memory as JSON, CSV, a Markdown table and PNG plots.
//
// It is a small, CPU-sized version of the Long Range Arena (Tay et al. 2021,
// "Long Range Arena: A Benchmark for Efficient Transformers"). A Preset
// (internal/configs/*.json) names the task (package data), the model
// dimensions, the optimiser settings and the budget: a step count, or
// training time per mixer (package train turns it into a step count and
// replans it from the pace). Each mixer trains with train.Run. Mixers that
// cannot run the task (a non-causal kind on next-token prediction) are
// reported as skipped.
//
// Everything a run needs to resume lives in the arena directory: the resolved
// preset (arena.json), and per mixer runs/<kind>/, a run directory (package
// run) plus job.json and, once finished, result.json. Running the same arena
// again skips finished mixers and continues interrupted ones from their
// newest checkpoint (same data order: the loader seeks to the step).
package arena
