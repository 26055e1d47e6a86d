package tokenizer

import (
	"container/heap"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Tokenizer is a byte-level BPE tokenizer: a pattern cuts text into
// pieces, and each piece's bytes are merged into tokens. It is safe for
// concurrent use.
type Tokenizer struct {
	pattern Pattern
	next    func(string) int

	// tokens[id] is the bytes of token id (a special token's content);
	// holes, ids no token has, are empty and not in ids.
	tokens []string
	// ids maps an ordinary token's bytes to its id.
	ids map[string]int32
	// byteID[b] is the id of the one-byte token b.
	byteID [256]int32
	// pairs maps a pair of adjacent ids (left<<32 | right) to its rank
	// and the id of the merged token.
	pairs map[uint64]merge
	// merges lists the merges in rank order (saved as tokenizer.json's
	// model.merges).
	merges [][2]int32
	// wholeFirst: a piece that is itself a token is that token, whatever
	// the merges would give (tiktoken; tokenizer.json's ignore_merges).
	wholeFirst bool
	// special lists the special tokens by id.
	special []Special
	// isSpecial marks the special tokens' ids.
	isSpecial map[int32]bool
}

// Special is a special token: text that encodes as one id only where the
// caller allows it (EncodeSpecial), such as <|endoftext|>.
type Special struct {
	Content string
	ID      int
}

type merge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// Pattern returns the tokenizer's pre-tokenisation pattern.
func (t *Tokenizer) Pattern() Pattern { return t.pattern }

// VocabSize returns the number of ids: one more than the largest id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// NumMerges returns the number of merge rules.
func (t *Tokenizer) NumMerges() int { return len(t.merges) }

// Specials returns the special tokens, by id.
func (t *Tokenizer) Specials() []Special { return append([]Special(nil), t.special...) }

// Token returns the bytes of token id and whether id is a token.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.tokens) {
		return "", false
	}
	if _, ok := t.ids[t.tokens[id]]; ok || t.isSpecial[int32(id)] {
		return t.tokens[id], true
	}
	return "", false
}

// TokenLens returns the byte length of every id's token (0 for an id that
// is no token): what bits per byte divide by.
func (t *Tokenizer) TokenLens() []int {
	lens := make([]int, len(t.tokens))
	for id := range lens {
		s, _ := t.Token(id)
		lens[id] = len(s)
	}
	return lens
}

// Encode returns the ids of text. Special tokens' contents in text are
// encoded as ordinary text (tiktoken's encode_ordinary).
func (t *Tokenizer) Encode(text string) []int {
	return t.AppendEncode(nil, text)
}

// AppendEncode appends the ids of text to dst, as Encode does.
func (t *Tokenizer) AppendEncode(dst []int, text string) []int {
	for len(text) > 0 {
		n := t.next(text)
		dst = t.appendPiece(dst, text[:n])
		text = text[n:]
	}
	return dst
}

// EncodeSpecial returns the ids of text, where each special token's
// content is that token (leftmost first, and the longest where several
// start at one place).
func (t *Tokenizer) EncodeSpecial(text string) []int {
	var dst []int
	for len(text) > 0 {
		at, sp := -1, Special{}
		for _, s := range t.special {
			if s.Content == "" {
				continue
			}
			i := strings.Index(text, s.Content)
			if i >= 0 && (at < 0 || i < at || (i == at && len(s.Content) > len(sp.Content))) {
				at, sp = i, s
			}
		}
		if at < 0 {
			return t.AppendEncode(dst, text)
		}
		dst = t.AppendEncode(dst, text[:at])
		dst = append(dst, sp.ID)
		text = text[at+len(sp.Content):]
	}
	return dst
}

// Pieces calls yield with each pre-tokenised piece of text, as Encode
// cuts it.
func (t *Tokenizer) Pieces(text string, yield func(string) bool) { t.pattern.Pieces(text, yield) }

// appendPiece appends the ids of one piece.
func (t *Tokenizer) appendPiece(dst []int, piece string) []int {
	if len(piece) == 1 {
		return append(dst, int(t.byteID[piece[0]]))
	}
	if t.wholeFirst {
		if id, ok := t.ids[piece]; ok {
			return append(dst, int(id))
		}
	}
	if len(piece) > longPiece {
		return t.appendLongPiece(dst, piece)
	}
	var partsBuf, ranksBuf [48]int32
	parts, ranks := partsBuf[:0], ranksBuf[:0]
	if len(piece) > len(partsBuf) {
		parts, ranks = make([]int32, 0, len(piece)), make([]int32, 0, len(piece))
	}
	for i := 0; i < len(piece); i++ {
		parts = append(parts, t.byteID[piece[i]])
	}
	const none = int32(1<<31 - 1)
	rank := func(i int) int32 {
		if m, ok := t.pairs[pairKey(parts[i], parts[i+1])]; ok {
			return m.rank
		}
		return none
	}
	for i := 0; i+1 < len(parts); i++ {
		ranks = append(ranks, rank(i))
	}
	// Merge the lowest-ranked pair, the leftmost of equals, until none
	// is left. ranks[i] is the rank of (parts[i], parts[i+1]).
	for len(parts) > 1 {
		best := 0
		for i := 1; i < len(ranks); i++ {
			if ranks[i] < ranks[best] {
				best = i
			}
		}
		if ranks[best] == none {
			break
		}
		parts[best] = t.pairs[pairKey(parts[best], parts[best+1])].id
		parts = append(parts[:best+1], parts[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best < len(ranks) {
			ranks[best] = rank(best)
		}
		if best > 0 {
			ranks[best-1] = rank(best - 1)
		}
	}
	for _, id := range parts {
		dst = append(dst, int(id))
	}
	return dst
}

// longPiece is the length above which a piece merges through a heap: the
// scan for the lowest pair is quadratic in the piece's length, and a
// piece can be as long as the text (a run of letters).
const longPiece = 128

// appendLongPiece appends the ids of a piece as appendPiece does, in
// O(n log n): the pairs wait in a heap ordered by rank, then by position,
// so the same pair is merged at each step (the lowest-ranked, the leftmost
// of equals); entries a merge made stale are skipped when they come up.
func (t *Tokenizer) appendLongPiece(dst []int, piece string) []int {
	n := len(piece)
	id := make([]int32, n)
	next, prev := make([]int32, n), make([]int32, n)
	for i := range n {
		id[i], next[i], prev[i] = t.byteID[piece[i]], int32(i+1), int32(i-1)
	}
	next[n-1] = -1
	h := &orderedHeap[mergeEntry]{less: mergeBefore}
	push := func(l int32) {
		if l < 0 || next[l] < 0 {
			return
		}
		r := next[l]
		if m, ok := t.pairs[pairKey(id[l], id[r])]; ok {
			heap.Push(h, mergeEntry{rank: m.rank, left: l, right: r, a: id[l], b: id[r]})
		}
	}
	for i := range n - 1 {
		push(int32(i))
	}
	for h.Len() > 0 {
		e := heap.Pop(h).(mergeEntry)
		if next[e.left] != e.right || id[e.left] != e.a || id[e.right] != e.b {
			continue // a merge changed the pair
		}
		id[e.left] = t.pairs[pairKey(e.a, e.b)].id
		id[e.right] = -1
		next[e.left] = next[e.right]
		if nr := next[e.right]; nr >= 0 {
			prev[nr] = e.left
		}
		next[e.right] = -2 // removed: no entry matches it again
		push(prev[e.left])
		push(e.left)
	}
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, int(id[i]))
	}
	return dst
}

type mergeEntry struct {
	rank, left, right, a, b int32
}

// mergeBefore orders the pending merges: the lowest rank first, the
// leftmost of equal ranks.
func mergeBefore(x, y mergeEntry) bool {
	if x.rank != y.rank {
		return x.rank < y.rank
	}
	return x.left < y.left
}

// Decode returns the text of ids: their bytes, concatenated. An id that is
// no token is an error naming it. The text is not valid UTF-8 where ids
// split a character.
func (t *Tokenizer) Decode(ids []int) (string, error) {
	b, err := t.AppendDecode(nil, ids)
	return string(b), err
}

// AppendDecode appends the bytes of ids to dst, as Decode does.
func (t *Tokenizer) AppendDecode(dst []byte, ids []int) ([]byte, error) {
	for i, id := range ids {
		s, ok := t.Token(id)
		if !ok {
			return dst, fmt.Errorf("ids[%d]: %d is not a token id of this tokenizer (vocabulary size %d)", i, id, len(t.tokens))
		}
		dst = append(dst, s...)
	}
	return dst, nil
}

// newTokenizer builds a tokenizer from its tokens (by id; "" for a hole),
// its merges in rank order (or, with nil merges, tiktoken's rule: every
// pair whose concatenation is a token merges, by that token's id), its
// special tokens and its pattern. The one-byte tokens must all exist.
func newTokenizer(p Pattern, tokens []string, merges [][2]int32, special []Special, wholeFirst bool) (*Tokenizer, error) {
	t := &Tokenizer{pattern: p, next: p.scanner(), tokens: tokens, ids: make(map[string]int32, len(tokens)),
		wholeFirst: wholeFirst, isSpecial: map[int32]bool{}}
	for i := range t.byteID {
		t.byteID[i] = -1
	}
	special = slices.Clone(special)
	sort.Slice(special, func(i, j int) bool { return special[i].ID < special[j].ID })
	for _, s := range special {
		t.isSpecial[int32(s.ID)] = true
	}
	t.special = special
	for id, s := range tokens {
		if s == "" || t.isSpecial[int32(id)] {
			continue
		}
		if prev, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokens %d and %d have the same bytes %q", prev, id, s)
		}
		t.ids[s] = int32(id)
		if len(s) == 1 {
			t.byteID[s[0]] = int32(id)
		}
	}
	for b, id := range t.byteID {
		if id < 0 {
			return nil, fmt.Errorf("no token for the byte 0x%02x: a byte-level vocabulary has all 256", b)
		}
	}
	t.pairs = make(map[uint64]merge, len(tokens))
	if merges == nil {
		// tiktoken: every split of a token into two tokens is a pair
		// ranked by the token's id, so equal ranks fall to the
		// leftmost pair, as in tiktoken's byte-pair merge.
		for id, s := range tokens {
			if len(s) < 2 || t.isSpecial[int32(id)] {
				continue
			}
			for k := 1; k < len(s); k++ {
				a, okA := t.ids[s[:k]]
				b, okB := t.ids[s[k:]]
				if okA && okB {
					t.pairs[pairKey(a, b)] = merge{rank: int32(id), id: int32(id)}
				}
			}
		}
		t.merges = tiktokenMerges(t)
		return t, nil
	}
	for r, m := range merges {
		a, b := m[0], m[1]
		id, ok := t.ids[tokens[a]+tokens[b]]
		if !ok {
			return nil, fmt.Errorf("merges[%d]: %q + %q is not in the vocabulary", r, tokens[a], tokens[b])
		}
		k := pairKey(a, b)
		if _, dup := t.pairs[k]; dup {
			return nil, fmt.Errorf("merges[%d]: %q %q is a repeated merge", r, tokens[a], tokens[b])
		}
		t.pairs[k] = merge{rank: int32(r), id: id}
	}
	t.merges = merges
	return t, nil
}

// tiktokenMerges lists the pairs of a tiktoken vocabulary in rank order
// (by the merged token's id, then by the left part's id), the merges
// a tokenizer.json of it carries.
func tiktokenMerges(t *Tokenizer) [][2]int32 {
	type pm struct {
		rank, a, b int32
	}
	all := make([]pm, 0, len(t.pairs))
	for k, m := range t.pairs {
		all = append(all, pm{m.rank, int32(k >> 32), int32(uint32(k))})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].rank != all[j].rank {
			return all[i].rank < all[j].rank
		}
		return all[i].a < all[j].a
	})
	out := make([][2]int32, len(all))
	for i, p := range all {
		out[i] = [2]int32{p.a, p.b}
	}
	return out
}
