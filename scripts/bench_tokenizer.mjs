// js-tiktoken's encoding speed on Go's net/http sources (the non-test .go
// files, concatenated), one thread: the peer of the Go benchmark
// BenchmarkEncodeCL100K. Prints one line: encoding bytes MB/s.
// Run through scripts/bench_tokenizer.sh, which alternates the two.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "x.js"));
const { Tiktoken } = require("js-tiktoken/lite");
const [dir, name, reps] = [process.argv[2], process.argv[3] || "cl100k_base", Number(process.argv[4] || 3)];
const text = fs.readdirSync(dir).sort().filter((f) => f.endsWith(".go") && !f.endsWith("_test.go"))
  .map((f) => fs.readFileSync(path.join(dir, f), "utf8")).join("");
const enc = new Tiktoken(require(`js-tiktoken/ranks/${name}`));
enc.encode(text.slice(0, 100000), [], []); // warm up
const t0 = process.hrtime.bigint();
let n = 0;
for (let i = 0; i < reps; i++) n += enc.encode(text, [], []).length;
const s = Number(process.hrtime.bigint() - t0) / 1e9;
const bytes = Buffer.byteLength(text);
console.log(`${name} ${bytes} ${(bytes * reps / 1e6 / s).toFixed(3)} ${n / reps}`);
