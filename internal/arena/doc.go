// Package arena trains every registered token mixer side by side on one task
// — the same model size, seed, data order and budget — and reports test
// metric, speed and memory as JSON, CSV, a Markdown table and PNG plots.
//
// It is a small, CPU-sized version of the Long Range Arena (Tay et al. 2021,
// "Long Range Arena: A Benchmark for Efficient Transformers"). A Preset
// (configs/*.json) names the task (package data), the model dimensions, the
// optimiser settings and the budget: a step count, or training time per
// mixer, which is turned into a step count after timing the first steps and
// replanned after every step from a running pace (pacer), so that the warmup
// + cosine schedule completes even when other jobs change the pace. Mixers that cannot run the
// task (a non-causal kind on next-token prediction) are reported as skipped.
//
// Everything a run needs to resume lives in the arena directory: the resolved
// preset (arena.json), and per mixer runs/<kind>/ with the model config, a
// checkpoint (safetensors weights with contract names plus AdamW moments
// "optim.m.<name>"/"optim.v.<name>", and ckpt.json with the step, timing and
// learning curve) and result.json once finished. Running the same arena again
// skips finished mixers and continues interrupted ones from their checkpoint
// (same data order: the loader seeks to the step).
package arena
