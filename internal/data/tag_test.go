package data

import (
	"slices"
	"strings"
	"testing"
)

// TestGoSpans: go/scanner's tokens of a small file, with their labels
// and exact byte offsets.
func TestGoSpans(t *testing.T) {
	src := "package p // é\n\nfunc f() string { return \"x\" + `y` }\nvar n = 0x1F\n"
	var got []string
	for _, s := range GoSpans([]byte(src)) {
		got = append(got, s.Label+":"+src[s.Start:s.End])
	}
	want := []string{"KEYWORD:package", "IDENT:p", "COMMENT:// é", "KEYWORD:func", "IDENT:f", "IDENT:string", "KEYWORD:return",
		`STRING:"x"`, "STRING:`y`", "KEYWORD:var", "IDENT:n", "NUMBER:0x1F"}
	if !slices.Equal(got, want) {
		t.Errorf("spans %q,\nwant %q", got, want)
	}
}

// TestTagRoundTrip: spans become BIO targets over bytes and decode back
// to the same spans, multi-byte characters included; a span that a token
// straddles covers the whole token.
func TestTagRoundTrip(t *testing.T) {
	text := "héllo wörld // ünïcode\n"
	spans := []Span{{0, 6, "IDENT"}, {7, 13, "IDENT"}, {14, 27, "COMMENT"}}
	rec := Record{Tokens: bytesToIDs([]byte(text)), Text: true, Spans: slices.Clone(spans), Where: "t"}
	recs := []Record{rec}
	labels := []string{"COMMENT", "IDENT"}
	if err := TagTargets(recs, labels, Offsets(nil)); err != nil {
		t.Fatal(err)
	}
	tags := make([]int, len(recs[0].Targets))
	probs := make([]float32, len(tags))
	for i, v := range recs[0].Targets {
		tags[i], probs[i] = int(v), 1
	}
	_, off := Offsets(nil)([]byte(text))
	var got []Span
	for _, s := range Spans(tags, probs, off, labels) {
		got = append(got, s.Span)
	}
	if !slices.Equal(got, spans) {
		t.Errorf("decoded %v, want %v", got, spans)
	}
	if p, r, f := SpanScores([][]Span{spans}, [][]Span{got[:2]}); p != 1 || r != 2.0/3 || f != 0.8 {
		t.Errorf("SpanScores: %v %v %v", p, r, f)
	}
	// Errors name the record.
	bad := []Record{{Tokens: bytesToIDs([]byte("ab")), Text: true, Spans: []Span{{0, 1, "X"}}, Where: "line 3"}}
	if err := TagTargets(bad, labels, Offsets(nil)); err == nil || !strings.Contains(err.Error(), `line 3: span label "X"`) {
		t.Errorf("unknown label: %v", err)
	}
}

// TestTagRecords: JSONL tagging lines parse, and malformed ones are
// errors naming the line and the problem.
func TestTagRecords(t *testing.T) {
	ok := `{"text": "ab cd", "spans": [{"start": 3, "end": 5, "label": "X"}, {"start": 0, "end": 2, "label": "Y"}]}` + "\n" +
		`{"tokens": [1, 2, 3], "tags": ["B-X", "I-X", "O"]}`
	recs, err := ParseRecords(strings.NewReader(ok), "f", false, false)
	if err != nil || len(recs) != 2 || recs[0].Spans[0].Start != 0 || !slices.Equal(SpanLabels(recs), []string{"X", "Y"}) {
		t.Fatalf("%+v, %v", recs, err)
	}
	for _, c := range []struct{ line, want string }{
		{`{"text": "ab", "spans": [{"start": 1, "end": 5, "label": "X"}]}`, "out of the text's 2 bytes"},
		{`{"text": "abcd", "spans": [{"start": 0, "end": 3, "label": "X"}, {"start": 2, "end": 4, "label": "Y"}]}`, "overlaps"},
		{`{"text": "ab", "spans": [{"start": 1, "end": 1, "label": "X"}]}`, "empty"},
		{`{"text": "ab", "spans": [{"start": 0, "end": 1}]}`, `no "label"`},
		{`{"text": "ab", "spans": [{"start": 0, "end": 1, "label": "X", "x": 1}]}`, `"spans": want an array`},
		{`{"tokens": [1], "spans": []}`, `"spans" need "text"`},
		{`{"text": "a", "tags": ["O"]}`, `"tags" need "tokens"`},
		{`{"tokens": [1, 2], "tags": ["O"]}`, "one tag per token (2)"},
		{`{"tokens": [1], "tags": ["X"]}`, `tags[0] "X"`},
		{`{"text": "a", "spans": [], "label": "x"}`, "a tagging line has its tags alone"},
		{`{"text": "a", "spans": [], "tags": []}`, `both "spans" and "tags"`},
	} {
		if _, err := ParseRecords(strings.NewReader(c.line), "f", false, false); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "f:1") {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
}

// TestPairRecords: embedding pairs parse, and malformed ones are errors
// naming the line and the problem.
func TestPairRecords(t *testing.T) {
	recs, err := ParseRecords(strings.NewReader(`{"text": "ab", "positive": "cd", "negative": "é"}`), "f", false, false)
	if err != nil || len(recs) != 1 || string(rune(recs[0].Positive[0])) != "c" || len(recs[0].Negative) != 2 {
		t.Fatalf("%+v, %v", recs, err)
	}
	for _, c := range []struct{ line, want string }{
		{`{"text": "a", "positive": ""}`, `"positive": want a non-empty string`},
		{`{"text": "a", "positive": 3}`, `"positive": want a non-empty string`},
		{`{"tokens": [1], "positive": "b"}`, `"positive" needs "text"`},
		{`{"text": "a", "positive": "b", "label": "x"}`, "a pair has its texts alone"},
		{`{"text": "a", "positive": "b", "negative": ""}`, `"negative": want a non-empty string`},
		{`{"text": "a", "negative": "b"}`, `"negative" without "positive"`},
	} {
		if _, err := ParseRecords(strings.NewReader(c.line), "f", false, false); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "f:1") {
			t.Errorf("%s: %v, want %q", c.line, err, c.want)
		}
	}
}
