package data

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Span is a labelled range [Start, End) of a text's bytes.
type Span struct {
	Start int    `json:"start"`
	End   int    `json:"end"`
	Label string `json:"label"`
}

// Tagging is BIO: a token that begins a span of label X is tagged "B-X",
// one inside it "I-X", one outside every span "O". A task "tag" model
// has one class per tag, in TagNames order.

// TagNames returns the tags of labels: "O", then "B-X" and "I-X" for
// each label X in order.
func TagNames(labels []string) []string {
	out := []string{"O"}
	for _, l := range labels {
		out = append(out, "B-"+l, "I-"+l)
	}
	return out
}

// SpanLabels returns the distinct labels of recs' spans and tags, sorted.
func SpanLabels(recs []Record) []string {
	seen := map[string]bool{}
	for _, r := range recs {
		for _, s := range r.Spans {
			seen[s.Label] = true
		}
		for _, t := range r.Tags {
			if l, ok := tagLabel(t); ok {
				seen[l] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for l := range seen {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// tagLabel is the label of tag "B-X" or "I-X"; ok is false for "O".
func tagLabel(tag string) (string, bool) {
	if l, ok := strings.CutPrefix(tag, "B-"); ok {
		return l, true
	}
	if l, ok := strings.CutPrefix(tag, "I-"); ok {
		return l, true
	}
	return "", false
}

// CheckSpans returns an error naming the first span of spans that is out
// of [0, n), empty, unlabelled or overlaps the one before it; spans are
// sorted by Start first.
func CheckSpans(spans []Span, n int) error {
	slices.SortStableFunc(spans, func(a, b Span) int { return a.Start - b.Start })
	for i, s := range spans {
		switch {
		case s.Label == "":
			return fmt.Errorf(`span %d [%d, %d): no "label"`, i, s.Start, s.End)
		case s.Start < 0 || s.End > n || s.Start >= s.End:
			return fmt.Errorf("span %d [%d, %d) %s: out of the text's %d bytes, or empty", i, s.Start, s.End, s.Label, n)
		case i > 0 && s.Start < spans[i-1].End:
			return fmt.Errorf("span %d [%d, %d) %s overlaps span [%d, %d) %s", i, s.Start, s.End, s.Label, spans[i-1].Start, spans[i-1].End, spans[i-1].Label)
		}
	}
	return nil
}

// checkTags returns an error naming the first tag of tags that is not
// "O", "B-X" or "I-X".
func checkTags(tags []string) error {
	for i, t := range tags {
		if _, ok := tagLabel(t); !ok && t != "O" || strings.HasSuffix(t, "-") {
			return fmt.Errorf(`tags[%d] %q: want "O", "B-label" or "I-label"`, i, t)
		}
	}
	return nil
}

// TagTargets sets the Targets of recs' tagged records from their spans
// (through offsets, each token's [start, end) bytes of the record's text,
// and its ids in tokens) or tags, as the indices of TagNames(labels): a
// token that meets a span is B- when it is the span's first such token,
// else I-; the rest are O. A tag or span label not among labels is an
// error naming the record. Records without spans or tags are left alone.
func TagTargets(recs []Record, labels []string, tokenize func(text []byte) (ids []int32, offsets [][2]int)) error {
	index := map[string]int32{}
	for i, t := range TagNames(labels) {
		index[t] = int32(i)
	}
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Tags != nil:
			r.Targets = make([]int32, len(r.Tags))
			for j, t := range r.Tags {
				k, ok := index[t]
				if !ok {
					return fmt.Errorf("%s: tag %q: its label is not one of %s", r.Where, t, strings.Join(labels, ", "))
				}
				r.Targets[j] = k
			}
		case r.Spans != nil:
			text := make([]byte, len(r.Tokens))
			for j, t := range r.Tokens {
				text[j] = byte(t)
			}
			ids, offsets := tokenize(text)
			r.Tokens, r.Targets = ids, make([]int32, len(ids))
			s := 0 // the first span that may meet token j
			for j, o := range offsets {
				for s < len(r.Spans) && r.Spans[s].End <= o[0] {
					s++
				}
				r.Targets[j] = index["O"]
				if s < len(r.Spans) && r.Spans[s].Start < o[1] {
					sp := r.Spans[s]
					tag := "I-" + sp.Label
					if j == 0 || offsets[j-1][1] <= sp.Start {
						tag = "B-" + sp.Label
					}
					k, ok := index[tag]
					if !ok {
						return fmt.Errorf("%s: span label %q is not one of %s", r.Where, sp.Label, strings.Join(labels, ", "))
					}
					r.Targets[j] = k
				}
			}
		}
	}
	return nil
}

// Spans decodes a text's tags (indices of TagNames(labels), one per
// token, with probs the probability of each) into spans over the tokens'
// byte offsets: B-X begins a span, I-X continues one of label X (or begins
// one after another label or O), O ends it. A span's Score is the mean
// probability of its tokens' tags.
func Spans(tags []int, probs []float32, offsets [][2]int, labels []string) []ScoredSpan {
	names := TagNames(labels)
	var out []ScoredSpan
	var cur *ScoredSpan
	n := 0
	end := func() {
		if cur != nil {
			cur.Score /= float32(n)
			out = append(out, *cur)
			cur = nil
		}
	}
	for j, t := range tags {
		name := names[t]
		l, inside := tagLabel(name)
		switch {
		case !inside:
			end()
		case strings.HasPrefix(name, "I-") && cur != nil && cur.Label == l:
			cur.End = offsets[j][1]
			cur.Score += probs[j]
			n++
		default:
			end()
			cur = &ScoredSpan{Span: Span{Start: offsets[j][0], End: offsets[j][1], Label: l}, Score: probs[j]}
			n = 1
		}
	}
	end()
	return out
}

// ScoredSpan is a predicted span and its score.
type ScoredSpan struct {
	Span
	Score float32
}

// NewTagged builds a tag task of train and val records whose Targets are
// set (TagTargets), split as NewLabeled splits them; tags names the
// classes (TagNames). Records must fit lim, and inputs of different
// lengths are padded with lim.PadID (or 0), without targets there.
func NewTagged(train, val []Record, tags []string, lim Limits, valFrac float64, seed uint64) (*Labeled, error) {
	train, val, err := HoldOut(train, val, valFrac, seed)
	if err != nil {
		return nil, err
	}
	l := &Labeled{info: Info{Name: "jsonl", Mode: Tag, Vocab: lim.Vocab, Classes: len(tags), PadID: lim.PadID,
		Metric: Accuracy, LabelNames: tags}}
	for s, recs := range [][]Record{train, val} {
		for _, r := range recs {
			if err := lim.Check(r); err != nil {
				return nil, err
			}
			if len(r.Targets) != len(r.Tokens) {
				return nil, fmt.Errorf("%s: %d tags for %d tokens: want one per token", r.Where, len(r.Targets), len(r.Tokens))
			}
			l.tokens[s] = append(l.tokens[s], r.Tokens)
			l.targets[s] = append(l.targets[s], r.Targets)
			l.info.MaxLen = max(l.info.MaxLen, len(r.Tokens))
		}
	}
	return l, nil
}

// SpanScores compares predicted spans with gold ones, text by text: a
// prediction is correct when a gold span has its start, end and label.
// It returns the precision (correct over predicted), the recall (correct
// over gold) and their harmonic mean F1; each is 0 when undefined.
func SpanScores(gold, pred [][]Span) (precision, recall, f1 float64) {
	var correct, ng, np int
	for i := range gold {
		want := map[Span]bool{}
		for _, s := range gold[i] {
			want[s] = true
		}
		ng += len(gold[i])
		if i < len(pred) {
			np += len(pred[i])
			for _, s := range pred[i] {
				if want[s] {
					correct++
				}
			}
		}
	}
	if np > 0 {
		precision = float64(correct) / float64(np)
	}
	if ng > 0 {
		recall = float64(correct) / float64(ng)
	}
	if precision+recall > 0 {
		f1 = 2 * precision * recall / (precision + recall)
	}
	return precision, recall, f1
}
