// Package tokenizer is byte-level BPE in pure Go: the tokenizers of the
// GPT-2 / tiktoken family, exact to their reference implementations, and
// the training of new ones.
//
// Byte-level BPE (Radford et al. 2019, "Language Models are Unsupervised
// Multitask Learners"; Sennrich et al. 2016 for BPE) encodes any byte
// sequence: ids 0–255 (or the vocabulary's one-byte tokens) are the bytes,
// so nothing is unknown and Decode(Encode(s)) = s for every string,
// valid UTF-8 or not.
//
// # Encoding
//
// A pattern first cuts the text into pieces (pre-tokenisation); each
// piece's bytes then merge, the pair of adjacent tokens of lowest rank
// first (the leftmost of equal ranks), until no pair of the piece has a
// rank:
//
//	pieces = pattern(text)                       GPT2, CL100K, O200K or Blocks
//	piece  = b₁ b₂ … bₙ                          one token per byte
//	while some adjacent (x, y) has rank(x, y):   merge the lowest-ranked pair
//	    … x y …  →  … xy …
//
// For a tiktoken rank file, rank(x, y) is the rank of the token xy, and a
// piece that is itself a token is that token; for a tokenizer.json, rank
// is the merge's index in model.merges, and a piece that is a token is
// taken whole only with model.ignore_merges. The scan for the lowest pair is
// quadratic in a piece's length, so a piece above 128 bytes (a long run of
// letters) merges through a heap instead, with the same result.
//
// # Patterns
//
// GPT2, CL100K and O200K cut words, numbers, punctuation and white space
// apart. Blocks cuts only at blank lines, so merges cross them all; on
// source code it packs more bytes into a token (on Go's sources, 3.03
// bytes per token at 4,096 ids against cl100k's 2.64).
//
// The three word-level patterns are regular expressions with a lookahead,
// (?!\S), which Go's regexp package cannot compile. They run here as
// hand-written scanners, one function per pattern that tries the expression's
// alternatives in order with its backtracking worked out by hand (see
// o200kUpperLower). The alternative, github.com/dlclark/regexp2, runs the
// expressions as written and cuts the same pieces, but about 30× slower:
// on the cl100k pattern over Go's net/http sources, one thread, it found
// 3 MB/s of pieces where the scanner found 50–95 MB/s (docs/tokenizers.md),
// and it would be a dependency for three fixed expressions. Blocks has
// no lookahead; its scanner is checked against Go's regexp. A
// tokenizer.json whose Split pattern is none of the four is refused with
// an error naming it.
//
// The scanners follow tiktoken's Rust expressions: \s is Unicode's
// White_Space (U+0085 is white space, U+FEFF is not) and (?i:'s…) folds
// case as Unicode does ('ſ matches 's). JavaScript's expressions, and so
// js-tiktoken and transformers.js, differ on those three characters.
//
// # Files
//
// Open reads a Hugging Face tokenizer.json of a byte-level BPE model, or a
// tiktoken rank file (which carries no pattern, so the caller names one);
// WriteJSON writes a tokenizer.json that both tokenmix and the Hugging
// Face libraries read. A tiktoken vocabulary written as tokenizer.json
// lists as merges every split of a token into two tokens, ordered by the
// token's rank, with ignore_merges set.
//
// # Training
//
// Train counts the pieces of the documents and merges, one new token at a
// time, the most frequent pair of adjacent tokens (equal counts: the pair
// of smaller ids), as the Hugging Face trainer does. Each merge recounts
// only the pairs beside the replaced ones, so long pieces (Blocks) cost
// no more per merge than short ones. It is deterministic; the seed only
// picks the documents when TrainOptions.MaxBytes caps them.
//
// # Exactness
//
// The tests compare, against golden files made by
// scripts/tokenizer_golden.mjs from js-tiktoken and transformers.js: the
// pieces of all three patterns and the ids of GPT-2 and cl100k_base on
// 10,000 seeded strings (mixed scripts, emoji, combining marks, control
// characters, white-space runs) and on Go's sources and this repository's
// docs; and the ids of a tokenizer trained here, read by transformers.js.
package tokenizer
