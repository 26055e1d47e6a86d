// ONNX Runtime (onnxruntime-node) on models `tokenmix export --format onnx`
// wrote: the reference the export's tests compare tokenmix's logits with.
//
//   node scripts/onnxruntime.mjs MODULES < jobs.json   (MODULES: a node_modules with onnxruntime-node)
//
// jobs.json is [{"model": PATH, "tokens": [[id, …], …]}, …]; the output is
// one JSON array with, per job, {"dims": [...], "logits": [...]} (the
// logits flattened row-major) or {"error": "..."}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const [modules] = process.argv.slice(2);
const require = createRequire(modules.replace(/\/?$/, "/"));
const ort = require("onnxruntime-node");

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
