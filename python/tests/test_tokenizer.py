"""tokenmix_torch's tokenizer reads the tokenizer.json a run keeps as tokenmix
does: the pieces of the gpt2, cl100k and o200k patterns on the 10,000 fuzzed
strings of tokenizer/testdata (js-tiktoken's), the ids of the tokenizers trained
there with the cl100k and blocks patterns (transformers.js's) and Go's ids on the same text; an lm trained here
through a tokenizer keeps its tokenizer.json, and tokenmix evaluates and
continues it in Go."""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.dirname(HERE)
sys.path[:0] = [HERE, PY]
import gobin  # noqa: E402
from tokenmix_torch import tokenizer as tokmod  # noqa: E402

DATA = os.path.join(gobin.ROOT, "tokenizer", "testdata")
TRAINED = os.path.join(DATA, "trained_go.json")


def rows(name, n=None):
    with gzip.open(os.path.join(DATA, name), "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if n is not None and i >= n:
                return
            yield json.loads(line)


class Exact(unittest.TestCase):
    def test_pieces(self):
        bad = 0
        for r in rows("golden_fuzz.jsonl.gz"):
            data = r["text"].encode()
            for p, want in r["pieces"].items():
                got = [len(x) for x in tokmod.pieces(p, data)]
                if got != want:
                    bad += 1
                    if bad <= 5:
                        print(f"{p} {r['text']!r}: {got} != {want}", file=sys.stderr)
        self.assertEqual(bad, 0)

    def test_trained(self):
        for file, ids in (("trained_go.json", "golden_trained.jsonl.gz"),
                          ("trained_go_blocks.json", "golden_trained_blocks.jsonl.gz")):
            tk = tokmod.load(os.path.join(DATA, file))
            n = 0
            for r in rows(ids):
                self.assertEqual(tk.encode(r["text"]), r["ids"], f"{file}: {r['text'][:60]!r}")
                n += 1
            self.assertGreater(n, 1000)

    def test_go(self):
        tk = tokmod.load(TRAINED)
        texts = ["héllo wörld\n\tx := 1", "a\xff\xfeb", "  \n\n  end", "it's 'S IT'S",
                 "abcabcab" * 200 + " " + "z" * 300]  # pieces above LONG_PIECE
        with tempfile.TemporaryDirectory() as d:
            inp = os.path.join(d, "in.jsonl")
            with open(inp, "w") as f:
                for t in texts:
                    f.write(json.dumps({"text": t}) + "\n")
            p = subprocess.run([gobin.binary(), "tokenizer", "encode", "--tokenizer", TRAINED, "--input", inp],
                               capture_output=True, text=True, check=True)
        got = [json.loads(line)["ids"] for line in p.stdout.splitlines()]
        self.assertEqual(got, [tk.encode(t) for t in texts])
        for t in texts:
            self.assertEqual(tk.decode(tk.encode(t)), t.encode())
        # bytes that are not UTF-8 are characters of their own
        raw = b"a\xff\xe2\x82 b"
        self.assertEqual(tk.decode(tk.encode(raw)), raw)

    def test_errors(self):
        with open(TRAINED) as f:
            good = json.load(f)
        for edit, want in (
                (lambda j: j.update(normalizer={"type": "NFC"}), "normalizer"),
                (lambda j: j["model"].update(type="WordPiece"), "model.type"),
                (lambda j: j["pre_tokenizer"]["pretokenizers"][0].update(pattern={"Regex": r"\w+"}), "pattern"),
                (lambda j: j["model"].update(merges=["Ġ zzz"]), "model.merges[0]"),
        ):
            j = json.loads(json.dumps(good))
            edit(j)
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(j, f)
            try:
                with self.assertRaisesRegex(ValueError, want.replace("[", r"\[").replace("]", r"\]")):
                    tokmod.load(f.name)
            finally:
                os.unlink(f.name)


class Run(unittest.TestCase):
    def test_twin_run(self):
        """An lm trained here through the tokenizer: the run keeps
        tokenizer.json, and Go scores and continues it through the same."""
        text = "".join(f"{i} green bottles, héllo wörld; func main() {{ fmt.Println(\"世界\") }}\n"
                       for i in range(200))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "t.txt"), "w") as f:
                f.write(text)
            shutil.copy(TRAINED, os.path.join(d, "tok.json"))
            cfg = {"vocab_size": 1024, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32, "max_len": 32,
                   "causal": True, "task": "lm", "tokenizer": "tok.json", "mixer": {"kind": "full"},
                   "train": {"batch_size": 4, "steps": 6, "lr": 0.003, "log_every": 1, "eval_every": 3,
                             "eval_batches": 2, "checkpoint_every": 3, "seed": 2}}
            with open(os.path.join(d, "cfg.json"), "w") as f:
                json.dump(cfg, f)
            run = os.path.join(d, "run")
            env = dict(os.environ, PYTHONPATH=PY + os.pathsep + os.environ.get("PYTHONPATH", ""))
            p = subprocess.run([sys.executable, "-m", "tokenmix_torch.train", "--threads", "1", "--config",
                                os.path.join(d, "cfg.json"), "--data", os.path.join(d, "t.txt"), "--out", run],
                               capture_output=True, text=True, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("validation tokens", p.stderr)
            with open(os.path.join(run, "config.json")) as f:
                self.assertEqual(json.load(f)["tokenizer"], "tokenizer.json")
            self.assertTrue(os.path.exists(os.path.join(run, "tokenizer.json")))
            with open(os.path.join(run, "metrics.jsonl")) as f:
                vals = [json.loads(x) for x in f if "val_loss" in x]
            self.assertTrue(vals and all(v["val_bits_per_byte"] < v["val_loss"] for v in vals), vals)
            g = subprocess.run([gobin.binary(), "eval", "--run", run, "--data", os.path.join(d, "t.txt"), "--json"],
                               capture_output=True, text=True)
            self.assertEqual(g.returncode, 0, g.stderr)
            ev = json.loads(g.stdout)
            self.assertGreater(ev["tokens"], 0)
            self.assertLess(ev["tokens"], ev["inputs"])
            g = subprocess.run([gobin.binary(), "generate", "--run", run, "--prompt", "héllo", "--max-tokens", "5",
                                "--temperature", "0"], capture_output=True)
            self.assertEqual(g.returncode, 0, g.stderr)


if __name__ == "__main__":
    unittest.main()
