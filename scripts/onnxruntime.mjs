// ONNX Runtime (onnxruntime-node) on models `tokenmix export --format onnx`
// wrote: the reference the export's tests compare tokenmix's logits with,
// and the peer of `tokenmix bench infer`.
//
//   node scripts/onnxruntime.mjs MODULES < jobs.json   (MODULES: a node_modules with onnxruntime-node)
//   node scripts/onnxruntime.mjs MODULES bench MODEL B T THREADS REPS < tokens.json
//
// jobs.json is [{"model": PATH, "tokens": [[id, …], …]}, …]; the output is
// one JSON array with, per job, {"dims": [...], "logits": [...]} (the
// logits flattened row-major) or {"error": "..."}. bench runs the model on
// the tokens [B,T] of stdin (a flat JSON array) with THREADS intra-op
// threads (one inter-op), one warm-up run, then REPS timed runs:
// {"ms": [...], "version": "..."}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const [modules] = process.argv.slice(2);
const require = createRequire(modules.replace(/\/?$/, "/"));
const ort = require("onnxruntime-node");

if (process.argv[3] === "bench") {
  const [model, B, T, threads, reps] = process.argv.slice(4).map((v, i) => (i ? Number(v) : v));
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1 });
  const ids = BigInt64Array.from(JSON.parse(readFileSync(0, "utf8")), (v) => BigInt(v));
  const feeds = { tokens: new ort.Tensor("int64", ids, [B, T]) };
  await s.run(feeds);
  const ms = [];
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  process.stdout.write(JSON.stringify({ ms, version: ort.env.versions?.common ?? "" }));
  process.exit(0);
}

const jobs = JSON.parse(readFileSync(0, "utf8"));
const sessions = new Map();
const out = [];
for (const job of jobs) {
  try {
    let s = sessions.get(job.model);
    if (!s) {
      s = await ort.InferenceSession.create(job.model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
      sessions.set(job.model, s);
    }
    const B = job.tokens.length, T = job.tokens[0].length;
    const ids = BigInt64Array.from(job.tokens.flat(), (v) => BigInt(v));
    const res = await s.run({ tokens: new ort.Tensor("int64", ids, [B, T]) });
    out.push({ dims: res.logits.dims, logits: Array.from(res.logits.data) });
  } catch (e) {
    out.push({ error: String(e.message ?? e) });
  }
}
process.stdout.write(JSON.stringify(out));
