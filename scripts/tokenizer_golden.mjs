// Reference ids for the tokenizer package's exactness tests, from js-tiktoken
// (an independent implementation: JavaScript regular expressions and its own
// byte-pair merge). Writes tokenizer/testdata/:
//   gpt2.tiktoken.gz, cl100k_base.tiktoken.gz   the rank files js-tiktoken ships
//   golden_fuzz.jsonl.gz   10,000 seeded strings: text, pieces of each pattern, ids
//   golden_trained.jsonl.gz, golden_trained_blocks.jsonl.gz
//                          the ids that @huggingface/transformers gives with
//                          tokenizer/testdata/trained_go.json and trained_go_blocks.json
//                          (written by the Go test TestTrainGolden) for 2,000 of the
//                          fuzzed strings and the non-test .go files of net/http
//   golden_files.jsonl.gz  per file of $GOROOT/src (non-test .go, outside testdata)
//                          and of this repository's README.md and docs/*.md: the
//                          text's SHA-256, and each encoding's id count and SHA-256
//                          of the ids written as decimal numbers joined by ","
//
// Regenerate (Node 20; run from the repository root):
//   mkdir -p /tmp/tkref && (cd /tmp/tkref && npm install --ignore-scripts js-tiktoken@1.0.21 @huggingface/transformers@4.3.2)
//   NODE_PATH=/tmp/tkref/node_modules node scripts/tokenizer_golden.mjs "$(go env GOROOT)/src"
//
// JavaScript's \s differs from Unicode's White_Space on two characters (it has
// U+FEFF and lacks U+0085), and js-tiktoken spells (?i:'s|…) as ASCII variants, so
// "'ſ" (U+017F) is no contraction for it. tokenmix follows tiktoken's Rust
// patterns there; the fuzzed strings leave these three characters out and the Go
// tests check them on their own.
import { createRequire } from "node:module";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "x.js"));
const { Tiktoken } = require("js-tiktoken/lite");
const { PreTrainedTokenizer } = require("@huggingface/transformers");
const ranks = {
  gpt2: require("js-tiktoken/ranks/gpt2"),
  cl100k: require("js-tiktoken/ranks/cl100k_base"),
  o200k: require("js-tiktoken/ranks/o200k_base"),
};
const goSrc = process.argv[2];
if (!goSrc) throw new Error("usage: node scripts/tokenizer_golden.mjs GOROOT/src");
const out = "tokenizer/testdata";
fs.mkdirSync(out, { recursive: true });

// Rank files in tiktoken's format, from js-tiktoken's compressed ranks.
function rankFile(r) {
  const lines = [];
  for (const line of r.bpe_ranks.split("\n").filter(Boolean)) {
    const [, offset, ...tokens] = line.split(" ");
    tokens.forEach((t, i) => lines.push(`${t} ${Number(offset) + i}`));
  }
  return lines.join("\n") + "\n";
}
fs.writeFileSync(`${out}/gpt2.tiktoken.gz`, zlib.gzipSync(rankFile(ranks.gpt2), { level: 9 }));
fs.writeFileSync(`${out}/cl100k_base.tiktoken.gz`, zlib.gzipSync(rankFile(ranks.cl100k), { level: 9 }));

const enc = { gpt2: new Tiktoken(ranks.gpt2), cl100k: new Tiktoken(ranks.cl100k) };
const patterns = Object.fromEntries(Object.entries(ranks).map(([k, r]) => [k, new RegExp(r.pat_str, "gu")]));
const utf8 = new TextEncoder();
const pieces = (name, s) => Array.from(s.matchAll(patterns[name]), (m) => utf8.encode(m[0]).length);
const ids = (name, s) => enc[name].encode(s, [], []);
const sha = (x) => createHash("sha256").update(x).digest("hex");

// Seeded strings: xorshift32 picks from character classes.
let state = 0x9e3779b9;
const rand = (n) => {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
};
const range = (a, b) => () => String.fromCodePoint(a + rand(b - a + 1));
const pick = (xs) => () => xs[rand(xs.length)];
const classes = [
  range(0x61, 0x7a), range(0x41, 0x5a), range(0x30, 0x39), range(0x21, 0x2f), range(0x3a, 0x40),
  pick([" ", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\r", "\v", "\f", "\u00a0", "\u2003", "\u3000", "\u2028", "\u2029", "\u202f"]),
  pick(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'x", "'"]),
  pick(["the", " the", "Hello", " World", "don't", "I'M", "we'RE", "HTTPServer", "camelCase", " 12345", "3.14159", "/usr/bin", "a/b/c", "func", " {\n\t", "\n\n\n", "   \n  "]),
  range(0xc0, 0x24f), range(0x370, 0x3ff), range(0x400, 0x4ff), range(0x5d0, 0x5ea), range(0x620, 0x64a),
  range(0x660, 0x669), range(0x900, 0x97f), range(0x300, 0x36f), range(0x4e00, 0x4e80), range(0x3040, 0x30ff),
  range(0xac00, 0xac40), range(0x1f600, 0x1f64f), range(0x1f300, 0x1f5ff), range(0x1f1e6, 0x1f1ff),
  pick(["\u{1f468}\u200d\u{1f469}\u200d\u{1f467}", "\u{1f44d}\u{1f3fd}", "\u2764\ufe0f", "e\u0301", "\u01c5", "\u02b0", "\u2160", "\u00bd", "\uff11\uff12"]),
  range(0x0, 0x1f), range(0x7f, 0x84), range(0x86, 0x9f), range(0x2000, 0x206f), range(0xff01, 0xff5e),
];
const fuzz = [];
for (let i = 0; i < 10000; i++) {
  let s = "";
  const n = 1 + rand(40);
  for (let k = 0; k < n; k++) s += classes[rand(classes.length)]();
  s = s.replace(/[\u0085\ufeff\u017f]/gu, "");
  if (s === "") s = "x";
  const row = { text: s, pieces: {}, ids: {} };
  for (const p of ["gpt2", "cl100k", "o200k"]) row.pieces[p] = pieces(p, s);
  for (const e of ["gpt2", "cl100k"]) row.ids[e] = ids(e, s);
  fuzz.push(JSON.stringify(row));
}
fs.writeFileSync(`${out}/golden_fuzz.jsonl.gz`, zlib.gzipSync(fuzz.join("\n") + "\n", { level: 9 }));

// The trained tokenizers through the Hugging Face reference.
const trained = fuzz.slice(0, 2000).map((l) => JSON.parse(l).text);
const httpDir = path.join(goSrc, "net/http");
for (const f of fs.readdirSync(httpDir).sort()) {
  if (f.endsWith(".go") && !f.endsWith("_test.go")) trained.push(fs.readFileSync(path.join(httpDir, f), "utf8"));
}
for (const [file, ids] of [["trained_go.json", "golden_trained.jsonl.gz"], ["trained_go_blocks.json", "golden_trained_blocks.jsonl.gz"]]) {
  const hf = new PreTrainedTokenizer(JSON.parse(fs.readFileSync(`${out}/${file}`, "utf8")), {});
  fs.writeFileSync(`${out}/${ids}`, zlib.gzipSync(
    trained.map((text) => JSON.stringify({ text, ids: hf.encode(text, { add_special_tokens: false }) })).join("\n") + "\n", { level: 9 }));
}

// Files: Go's sources and this repository's docs.
function walk(dir, rel, acc) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.isDirectory()) {
      if (e.name !== "testdata") walk(path.join(dir, e.name), rel + e.name + "/", acc);
    } else if (e.name.endsWith(".go") && !e.name.endsWith("_test.go")) acc.push(rel + e.name);
  }
  return acc;
}
const files = walk(goSrc, "", []).map((f) => ["go", f, path.join(goSrc, f)]);
files.push(["repo", "README.md", "README.md"]);
for (const f of fs.readdirSync("docs").sort()) if (f.endsWith(".md")) files.push(["repo", "docs/" + f, path.join("docs", f)]);
const strict = new TextDecoder("utf-8", { fatal: true });
const rows = [];
let bytes = 0;
for (const [root, name, p] of files) {
  const raw = fs.readFileSync(p);
  let text;
  try { text = strict.decode(raw); } catch { continue; }
  bytes += raw.length;
  const row = { root, file: name, sha256: sha(raw) };
  for (const e of ["gpt2", "cl100k"]) {
    const x = ids(e, text);
    row[e] = { n: x.length, sha256: sha(x.join(",")) };
  }
  const o = pieces("o200k", text);
  row.o200k_pieces = { n: o.length, sha256: sha(o.join(",")) };
  rows.push(JSON.stringify(row));
}
fs.writeFileSync(`${out}/golden_files.jsonl.gz`, zlib.gzipSync(rows.join("\n") + "\n", { level: 9 }));
console.log(`${fuzz.length} fuzzed strings, ${rows.length} files (${(bytes / 1e6).toFixed(1)} MB)`);
