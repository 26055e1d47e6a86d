package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tokenmix/tokenmix/internal/chat"
)

// Record is one input line of a JSONL file: {"text": "..."} or
// {"tokens": [3, 17, …]}, with "label" (a string, or an integer used as a
// name) where the file is labelled, or, for an lm, "targets" (one integer
// per token, −1 for a position without one). Other fields are ignored.
type Record struct {
	Tokens  []int32
	Text    bool    // the tokens are the bytes of "text"
	Label   string  // "" when the line has no label
	Targets []int32 // nil when the line has no "targets"
	Where   string  // "file:line", for messages
	// Messages is a conversation ("messages"), which RenderChat turns
	// into Tokens and Targets; nil otherwise.
	Messages []chat.Message
	// Spans are the labelled byte ranges of "text" ("spans"), Tags the
	// BIO tag of each of "tokens" ("tags"): a tagging example, whose
	// Targets TagTargets sets. nil otherwise.
	Spans []Span
	Tags  []string
	// Positive and Negative are an embedding pair's other texts
	// ("positive", and the optional "negative"), as the ids of their
	// bytes (Retokenize encodes them with Tokens); nil otherwise.
	Positive, Negative []int32
}

// ReadRecords reads the JSONL file at path. A line that is not a JSON
// object with exactly one of "text" (a string) and "tokens" (an array of
// integers), or whose "label" is neither a string nor an integer, is an
// error naming the file, the line and what is wrong; so is an empty input
// and, with wantLabel, a line without a label. Blank lines are skipped.
// With plain, a line that does not start with "{" is a text input (one
// per line, without its newline).
func ReadRecords(path string, wantLabel, plain bool) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseRecords(f, path, wantLabel, plain)
}

// ParseRecords is ReadRecords on r, with name in messages.
func ParseRecords(r io.Reader, name string, wantLabel, plain bool) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, n)
		if plain && !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			out = append(out, Record{Tokens: bytesToIDs(line), Text: true, Where: where})
			continue
		}
		rec, err := parseRecord(line, wantLabel)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", where, err)
		}
		rec.Where = where
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no input lines", name)
	}
	return out, nil
}

func parseRecord(line []byte, wantLabel bool) (Record, error) {
	var rec Record
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return rec, fmt.Errorf("not a JSON object: %v", err)
	}
	text, hasText := m["text"]
	toks, hasToks := m["tokens"]
	if msgs, ok := m["messages"]; ok {
		for _, k := range []string{"text", "tokens", "targets", "label"} {
			if _, ok := m[k]; ok {
				return rec, fmt.Errorf(`"messages" with %q: a conversation is its messages alone`, k)
			}
		}
		d := json.NewDecoder(bytes.NewReader(msgs))
		d.DisallowUnknownFields()
		if err := d.Decode(&rec.Messages); err != nil || rec.Messages == nil {
			return rec, fmt.Errorf(`"messages": want an array of {"role": …, "content": …} objects, got %s`, clip(msgs))
		}
		if err := chat.CheckMessages(rec.Messages); err != nil {
			return rec, err
		}
		if wantLabel {
			return rec, fmt.Errorf(`no "label" (a conversation trains an lm)`)
		}
		return rec, nil
	}
	switch {
	case hasText && hasToks:
		return rec, fmt.Errorf(`both "text" and "tokens": want one of them`)
	case hasText:
		var s string
		if err := json.Unmarshal(text, &s); err != nil {
			return rec, fmt.Errorf(`"text": want a string, got %s`, clip(text))
		}
		rec.Tokens, rec.Text = bytesToIDs([]byte(s)), true
	case hasToks:
		if err := json.Unmarshal(toks, &rec.Tokens); err != nil {
			return rec, fmt.Errorf(`"tokens": want an array of integers, got %s`, clip(toks))
		}
	default:
		return rec, fmt.Errorf(`want "text" (a string) or "tokens" (an array of integers)`)
	}
	if len(rec.Tokens) == 0 {
		return rec, fmt.Errorf("empty input")
	}
	if tg, ok := m["targets"]; ok {
		if err := json.Unmarshal(tg, &rec.Targets); err != nil || rec.Targets == nil {
			return rec, fmt.Errorf(`"targets": want an array of integers, got %s`, clip(tg))
		}
		if len(rec.Targets) != len(rec.Tokens) {
			return rec, fmt.Errorf(`"targets": %d values for %d tokens: want one per token (−1 for none)`, len(rec.Targets), len(rec.Tokens))
		}
	}
	if pos, ok := m["positive"]; ok {
		if !rec.Text {
			return rec, fmt.Errorf(`"positive" needs "text" (an embedding pair is two texts)`)
		}
		if rec.Targets != nil || m["label"] != nil || m["spans"] != nil {
			return rec, fmt.Errorf(`"positive" with "label", "targets" or "spans": a pair has its texts alone`)
		}
		var p, n string
		if err := json.Unmarshal(pos, &p); err != nil || p == "" {
			return rec, fmt.Errorf(`"positive": want a non-empty string, got %s`, clip(pos))
		}
		rec.Positive = bytesToIDs([]byte(p))
		if neg, ok := m["negative"]; ok {
			if err := json.Unmarshal(neg, &n); err != nil || n == "" {
				return rec, fmt.Errorf(`"negative": want a non-empty string, got %s`, clip(neg))
			}
			rec.Negative = bytesToIDs([]byte(n))
		}
		return rec, nil
	}
	if _, ok := m["negative"]; ok {
		return rec, fmt.Errorf(`"negative" without "positive"`)
	}
	spans, hasSpans := m["spans"]
	tags, hasTags := m["tags"]
	switch {
	case hasSpans && hasTags:
		return rec, fmt.Errorf(`both "spans" and "tags": want "spans" with "text", or "tags" with "tokens"`)
	case (hasSpans || hasTags) && (rec.Targets != nil || m["label"] != nil):
		return rec, fmt.Errorf(`"spans" or "tags" with "label" or "targets": a tagging line has its tags alone`)
	case hasSpans:
		if !rec.Text {
			return rec, fmt.Errorf(`"spans" need "text" (byte offsets into it); give "tags" with "tokens"`)
		}
		d := json.NewDecoder(bytes.NewReader(spans))
		d.DisallowUnknownFields()
		if err := d.Decode(&rec.Spans); err != nil {
			return rec, fmt.Errorf(`"spans": want an array of {"start", "end", "label"} objects, got %s`, clip(spans))
		}
		if rec.Spans == nil { // null: none
			rec.Spans = []Span{}
		}
		if err := CheckSpans(rec.Spans, len(rec.Tokens)); err != nil {
			return rec, fmt.Errorf(`"spans": %v`, err)
		}
		return rec, nil
	case hasTags:
		if rec.Text {
			return rec, fmt.Errorf(`"tags" need "tokens" (one tag each); give "spans" with "text"`)
		}
		if err := json.Unmarshal(tags, &rec.Tags); err != nil || len(rec.Tags) != len(rec.Tokens) {
			return rec, fmt.Errorf(`"tags": want an array of one tag per token (%d), got %s`, len(rec.Tokens), clip(tags))
		}
		if err := checkTags(rec.Tags); err != nil {
			return rec, err
		}
		return rec, nil
	}
	l, ok := m["label"]
	switch {
	case !ok && wantLabel:
		return rec, fmt.Errorf(`no "label"`)
	case !ok:
	default:
		var s string
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(l))
		d.UseNumber()
		if json.Unmarshal(l, &s) == nil {
			rec.Label = s
		} else if d.Decode(&n) == nil && isInt(n.String()) {
			rec.Label = n.String()
		} else {
			return rec, fmt.Errorf(`"label": want a string or an integer, got %s`, clip(l))
		}
		if rec.Label == "" {
			return rec, fmt.Errorf(`"label" is empty`)
		}
	}
	return rec, nil
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func bytesToIDs(b []byte) []int32 {
	ids := make([]int32, len(b))
	for i, c := range b {
		ids[i] = int32(c)
	}
	return ids
}

// clip shortens a JSON value for a message.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

// LabelNames returns the distinct labels of recs in index order: sorted,
// numerically when every label is an integer.
func LabelNames(recs []Record) []string {
	seen := map[string]bool{}
	var names []string
	numeric := true
	for _, r := range recs {
		if !seen[r.Label] {
			seen[r.Label] = true
			names = append(names, r.Label)
			numeric = numeric && isInt(r.Label)
		}
	}
	if numeric {
		sort.Slice(names, func(i, j int) bool {
			a, _ := strconv.ParseInt(names[i], 10, 64)
			b, _ := strconv.ParseInt(names[j], 10, 64)
			return a < b
		})
	} else {
		sort.Strings(names)
	}
	return names
}

// Limits are what a model accepts: tokens below Vocab, at most MaxLen of
// them, and PadID (−1: none) never inside a text's byte range.
type Limits struct {
	Vocab, MaxLen, PadID int
}

// Check returns an error naming r's line when r does not fit l.
func (l Limits) Check(r Record) error {
	if len(r.Tokens) > l.MaxLen {
		return fmt.Errorf("%s: %d tokens, longer than max_len %d", r.Where, len(r.Tokens), l.MaxLen)
	}
	for _, v := range r.Tokens {
		if v < 0 || int(v) >= l.Vocab {
			return fmt.Errorf("%s: token %d outside the vocabulary [0, %d)", r.Where, v, l.Vocab)
		}
	}
	for _, v := range r.Targets {
		if v < -1 || int(v) >= l.Vocab {
			return fmt.Errorf("%s: target %d outside the vocabulary [0, %d) (−1 for none)", r.Where, v, l.Vocab)
		}
	}
	if r.Text && l.PadID >= 0 && l.PadID < 256 {
		return fmt.Errorf("%s: text input needs a pad_id outside the byte range 0–255 (so vocab_size ≥ 257); the config's pad_id is %d", r.Where, l.PadID)
	}
	return nil
}

// Labeled is a task built from JSONL records, with train and validation
// splits (Test is the validation split): a classifier's labelled lines
// (NewLabeled), or an lm's token sequences with a target per position
// (NewSequences).
type Labeled struct {
	info    Info
	tokens  [2][][]int32
	labels  [2][]int32   // Classify
	targets [2][][]int32 // LM
}

// HoldOut returns train and val; with val nil, the last valFrac of the
// training records (at least one) after a shuffle drawn from seed.
func HoldOut(train, val []Record, valFrac float64, seed uint64) ([]Record, []Record, error) {
	if val != nil {
		return train, val, nil
	}
	train = slices.Clone(train)
	rand.New(rand.NewPCG(seed, 0x6a736f6e6c)).Shuffle(len(train), func(i, j int) { train[i], train[j] = train[j], train[i] })
	n := max(1, int(valFrac*float64(len(train))+0.5))
	if n >= len(train) {
		return nil, nil, fmt.Errorf("data: %d lines are too few to hold out %d for validation", len(train), n)
	}
	return train[:len(train)-n], train[len(train)-n:], nil
}

// NewLabeled builds the task of train and val records with the class names
// names (LabelNames of the training records, typically). With val nil, it
// holds out the last valFrac of the training records (at least one) after
// a shuffle drawn from seed. Records must fit lim; a label not in names,
// and inputs of different lengths without a pad_id, are errors.
func NewLabeled(train, val []Record, names []string, lim Limits, valFrac float64, seed uint64) (*Labeled, error) {
	train, val, err := HoldOut(train, val, valFrac, seed)
	if err != nil {
		return nil, err
	}
	index := map[string]int32{}
	for i, n := range names {
		index[n] = int32(i)
	}
	l := &Labeled{info: Info{Name: "jsonl", Mode: Classify, Vocab: lim.Vocab, Classes: len(names),
		PadID: lim.PadID, Metric: Accuracy, LabelNames: names}}
	minLen := lim.MaxLen
	for s, recs := range [][]Record{train, val} {
		for _, r := range recs {
			if err := lim.Check(r); err != nil {
				return nil, err
			}
			k, ok := index[r.Label]
			if !ok {
				return nil, fmt.Errorf("%s: label %q is not one of the training labels (%s)", r.Where, r.Label, strings.Join(names, ", "))
			}
			l.tokens[s] = append(l.tokens[s], r.Tokens)
			l.labels[s] = append(l.labels[s], k)
			l.info.MaxLen = max(l.info.MaxLen, len(r.Tokens))
			minLen = min(minLen, len(r.Tokens))
		}
	}
	if minLen != l.info.MaxLen && lim.PadID < 0 {
		return nil, fmt.Errorf("data: inputs have %d to %d tokens: different lengths need a pad_id in the config (outside 0–255 for text, so vocab_size ≥ 257)", minLen, l.info.MaxLen)
	}
	return l, nil
}

// NewSequences builds an lm task (next-token prediction, causal) of train
// and val records, split as NewLabeled splits them. A record's targets are
// its "targets", or, without them, its next tokens (the last position has
// none). The metric is bits per byte when every target is the next token
// (text; for token ids it is bits per token), and accuracy over the
// targets otherwise (tasks that score some positions, such as recall's
// queries). Records must fit lim; a line without a target, and a label,
// are errors. Sequences of different lengths are padded at the end in a
// batch, with no target there.
func NewSequences(train, val []Record, lim Limits, valFrac float64, seed uint64) (*Labeled, error) {
	train, val, err := HoldOut(train, val, valFrac, seed)
	if err != nil {
		return nil, err
	}
	l := &Labeled{info: Info{Name: "jsonl", Mode: LM, Vocab: lim.Vocab, PadID: -1, Causal: true, Metric: BitsPerByte}}
	for s, recs := range [][]Record{train, val} {
		for _, r := range recs {
			if err := lim.Check(r); err != nil {
				return nil, err
			}
			if r.Label != "" {
				return nil, fmt.Errorf(`%s: a "label" in an lm's lines: an lm takes "targets" (or the next tokens)`, r.Where)
			}
			tg := r.Targets
			if tg == nil {
				tg = make([]int32, len(r.Tokens))
				copy(tg, r.Tokens[1:])
				tg[len(tg)-1] = -1
			}
			n := 0
			for i, v := range tg {
				if v >= 0 {
					n++
				}
				if i+1 < len(tg) && v != r.Tokens[i+1] || i+1 == len(tg) && v != -1 {
					l.info.Metric = Accuracy
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: no target: every value of \"targets\" is −1 (or the line has a single token)", r.Where)
			}
			l.tokens[s] = append(l.tokens[s], r.Tokens)
			l.targets[s] = append(l.targets[s], tg)
			l.info.MaxLen = max(l.info.MaxLen, len(r.Tokens))
		}
	}
	return l, nil
}

// Info implements Task.
func (l *Labeled) Info() Info { return l.info }

func (l *Labeled) split(s Split) int {
	if s == Train {
		return 0
	}
	return 1
}

// Len implements Task.
func (l *Labeled) Len(s Split) int { return len(l.tokens[l.split(s)]) }

// ExampleLen implements Task.
func (l *Labeled) ExampleLen(s Split, i int) int { return len(l.tokens[l.split(s)][i]) }

// Example implements Task.
func (l *Labeled) Example(tokens, targets []int32, s Split, i int) {
	k := l.split(s)
	copy(tokens, l.tokens[k][i])
	if l.info.Mode.PerPosition() {
		copy(targets, l.targets[k][i])
		return
	}
	targets[0] = l.labels[k][i]
}
