package tokenizer

import (
	"container/heap"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TrainOptions configures Train.
type TrainOptions struct {
	// VocabSize is the number of ids of the result: the 256 bytes, the
	// merged tokens and the special tokens. Training stops earlier when
	// no pair of tokens is left to merge.
	VocabSize int
	// Pattern cuts the text into pieces; merges never cross a piece's
	// end. Default CL100K.
	Pattern Pattern
	// Special lists the special tokens' contents; they take the last
	// ids, in this order.
	Special []string
	// MaxBytes, when positive, caps the training text: documents are
	// taken in an order shuffled by Seed until the next would pass it.
	MaxBytes int64
	// Seed orders the documents for MaxBytes. Training is deterministic:
	// the same documents, options and seed give the same tokenizer.
	Seed uint64
}

// Train learns a byte-level BPE tokenizer from documents: ids 0–255 are
// the bytes, then each merge adds the token of the most frequent pair of
// adjacent tokens within the pattern's pieces (equal counts go to the
// pair of smaller ids, left id first), then come the special tokens.
func Train(docs []string, opt TrainOptions) (*Tokenizer, error) {
	if opt.Pattern == 0 {
		opt.Pattern = CL100K
	}
	if _, ok := patternNames[opt.Pattern]; !ok {
		return nil, fmt.Errorf("invalid pattern %d", int(opt.Pattern))
	}
	if opt.VocabSize < 256+len(opt.Special) {
		return nil, fmt.Errorf("vocab size %d is below the 256 bytes and %d special tokens", opt.VocabSize, len(opt.Special))
	}
	if opt.VocabSize > maxID {
		return nil, fmt.Errorf("vocab size %d is above %d", opt.VocabSize, maxID)
	}
	seen := map[string]bool{}
	for i, s := range opt.Special {
		if s == "" {
			return nil, fmt.Errorf("special token %d: empty", i)
		}
		if seen[s] {
			return nil, fmt.Errorf("special token %q: given twice", s)
		}
		seen[s] = true
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no documents to train on")
	}
	docs = sample(docs, opt.MaxBytes, opt.Seed)
	if len(docs) == 0 {
		return nil, fmt.Errorf("max bytes %d: every document is longer (a document is taken whole or not at all)", opt.MaxBytes)
	}

	// Count the pieces.
	counts := map[string]int64{}
	for _, d := range docs {
		opt.Pattern.Pieces(d, func(p string) bool {
			counts[p]++
			return true
		})
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tokens := make([]string, 256, opt.VocabSize)
	for b := range tokens {
		tokens[b] = string([]byte{byte(b)})
	}
	ids := make(map[string]int32, opt.VocabSize)
	for b, s := range tokens {
		ids[s] = int32(b)
	}
	bt := &bpeTrainer{pairs: map[uint64]int64{}, where: map[uint64][]int32{}, heap: orderedHeap[pairEntry]{less: pairBefore}}
	for _, k := range keys {
		if len(k) < 2 {
			continue
		}
		syms := make([]int32, len(k))
		for i := 0; i < len(k); i++ {
			syms[i] = int32(k[i])
		}
		bt.words = append(bt.words, trainWord{syms: syms, n: counts[k]})
	}
	bt.stamp = make([]int32, len(bt.words))
	for w := range bt.words {
		bt.add(int32(w))
	}
	for k, c := range bt.pairs {
		heap.Push(&bt.heap, pairEntry{count: c, a: int32(k >> 32), b: int32(uint32(k))})
	}

	var merges [][2]int32
	target := opt.VocabSize - len(opt.Special)
	for len(tokens) < target && bt.heap.Len() > 0 {
		e := heap.Pop(&bt.heap).(pairEntry)
		k := pairKey(e.a, e.b)
		cur := bt.pairs[k]
		if cur != e.count {
			if cur > 0 {
				heap.Push(&bt.heap, pairEntry{count: cur, a: e.a, b: e.b})
			}
			continue
		}
		s := tokens[e.a] + tokens[e.b]
		id, ok := ids[s]
		if !ok {
			id = int32(len(tokens))
			tokens = append(tokens, s)
			ids[s] = id
		}
		merges = append(merges, [2]int32{e.a, e.b})
		bt.merge(e.a, e.b, id)
	}
	var special []Special
	for _, s := range opt.Special {
		special = append(special, Special{Content: s, ID: len(tokens)})
		tokens = append(tokens, s)
	}
	return newTokenizer(opt.Pattern, tokens, merges, special, false)
}

// sample returns the documents in a seeded order up to maxBytes, or all of
// them in their order when maxBytes is not positive or not reached.
func sample(docs []string, maxBytes int64, seed uint64) []string {
	if maxBytes <= 0 {
		return docs
	}
	var total int64
	for _, d := range docs {
		total += int64(len(d))
	}
	if total <= maxBytes {
		return docs
	}
	order := rand.New(rand.NewPCG(seed, 0x746f6b656e697a65)).Perm(len(docs))
	var out []string
	total = 0
	for _, i := range order {
		if total+int64(len(docs[i])) > maxBytes {
			break
		}
		total += int64(len(docs[i]))
		out = append(out, docs[i])
	}
	return out
}

type trainWord struct {
	syms []int32
	n    int64
}

// bpeTrainer holds the pair counts over the distinct pieces (words).
type bpeTrainer struct {
	words []trainWord
	pairs map[uint64]int64
	// where lists, per pair, the words that held it when it was counted
	// (some may no longer hold it).
	where map[uint64][]int32
	heap  orderedHeap[pairEntry]
	stamp []int32
	epoch int32
}

// add counts the word's pairs and notes the word under each of them.
func (bt *bpeTrainer) add(w int32) {
	wd := &bt.words[w]
	for i := 0; i+1 < len(wd.syms); i++ {
		k := pairKey(wd.syms[i], wd.syms[i+1])
		bt.pairs[k] += wd.n
		bt.note(k, w)
	}
}

// note lists word w under pair k, once.
func (bt *bpeTrainer) note(k uint64, w int32) {
	if l := bt.where[k]; len(l) == 0 || l[len(l)-1] != w {
		bt.where[k] = append(l, w)
	}
}

// merge replaces every (a, b) in the words that hold it by id, left to
// right, and updates the counts and the heap. Only the pairs next to a
// replaced (a, b) change, so only those are counted again: the cost is a
// scan of each word that holds the pair plus a few map updates per
// occurrence, whatever the word's length.
func (bt *bpeTrainer) merge(a, b, id int32) {
	k := pairKey(a, b)
	bt.epoch++
	changed := map[uint64]bool{}
	count := func(x, y int32, delta int64) {
		pk := pairKey(x, y)
		bt.pairs[pk] += delta
		changed[pk] = true
	}
	// The positions of the (a, b) replaced, in the old symbols, and of the
	// ids that replace them, in the new.
	var at, ni []int
	for _, w := range bt.where[k] {
		if bt.stamp[w] == bt.epoch {
			continue
		}
		bt.stamp[w] = bt.epoch
		wd := &bt.words[w]
		syms := wd.syms
		at = at[:0]
		for i := 0; i+1 < len(syms); i++ {
			if syms[i] == a && syms[i+1] == b {
				at = append(at, i)
				i++
			}
		}
		if len(at) == 0 {
			continue
		}
		// Uncount the old pairs that touch a replaced symbol: for an
		// occurrence at i, the pairs starting at i−1, i and i+1, each once
		// (consecutive occurrences share one).
		last := -1
		for _, i := range at {
			for j := max(i-1, last+1); j <= i+1 && j+1 < len(syms); j++ {
				count(syms[j], syms[j+1], -wd.n)
				last = j
			}
		}
		// Replace, then count the new pairs that touch an id, each once.
		out := syms[:0]
		ni = ni[:0]
		o := 0
		for i := 0; i < len(syms); i++ {
			if o < len(at) && at[o] == i {
				ni = append(ni, len(out))
				out = append(out, id)
				i++
				o++
				continue
			}
			out = append(out, syms[i])
		}
		wd.syms = out
		last = -1
		for _, i := range ni {
			for j := max(i-1, last+1); j <= i && j+1 < len(out); j++ {
				count(out[j], out[j+1], wd.n)
				last = j
				bt.note(pairKey(out[j], out[j+1]), w)
			}
		}
	}
	delete(bt.where, k)
	delete(changed, k)
	delete(bt.pairs, k)
	tk := make([]uint64, 0, len(changed))
	for t := range changed {
		tk = append(tk, t)
	}
	sort.Slice(tk, func(i, j int) bool { return tk[i] < tk[j] })
	for _, t := range tk {
		if c := bt.pairs[t]; c > 0 {
			heap.Push(&bt.heap, pairEntry{count: c, a: int32(t >> 32), b: int32(uint32(t))})
		} else {
			delete(bt.pairs, t)
		}
	}
}

type pairEntry struct {
	count int64
	a, b  int32
}

// pairBefore orders the pair counts: the highest count first, then the
// smaller pair of ids.
func pairBefore(x, y pairEntry) bool {
	if x.count != y.count {
		return x.count > y.count
	}
	if x.a != y.a {
		return x.a < y.a
	}
	return x.b < y.b
}

// ReadDocs reads training documents: each path is a file, or a directory
// whose regular files are read in lexical order (hidden entries skipped).
// With ext set (e.g. ".go"), only files of a directory with that suffix
// are read. Files holding a NUL byte are taken for binary and skipped.
func ReadDocs(paths []string, ext string) ([]string, error) {
	var docs []string
	read := func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.IndexByte(string(b), 0) < 0 {
			docs = append(docs, string(b))
		}
		return nil
	}
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if err := read(root); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ext) {
				return read(p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("no text files in %s", strings.Join(paths, ", "))
	}
	return docs, nil
}
