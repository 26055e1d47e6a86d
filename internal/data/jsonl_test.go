package data

import (
	"reflect"
	"strings"
	"testing"
)

// TestRecordErrors: every malformed line is an error naming the file, the
// line and what is wrong.
func TestRecordErrors(t *testing.T) {
	for _, c := range []struct {
		line, want string
	}{
		{`not json`, `f.jsonl:2: not a JSON object`},
		{`[1, 2]`, `f.jsonl:2: not a JSON object`},
		{`{"label": "a"}`, `f.jsonl:2: want "text" (a string) or "tokens"`},
		{`{"text": "x", "tokens": [1], "label": "a"}`, `f.jsonl:2: both "text" and "tokens"`},
		{`{"text": 5, "label": "a"}`, `f.jsonl:2: "text": want a string, got 5`},
		{`{"tokens": "abc", "label": "a"}`, `f.jsonl:2: "tokens": want an array of integers, got "abc"`},
		{`{"tokens": [1, 2.5], "label": "a"}`, `f.jsonl:2: "tokens": want an array of integers`},
		{`{"text": "", "label": "a"}`, `f.jsonl:2: empty input`},
		{`{"tokens": [], "label": "a"}`, `f.jsonl:2: empty input`},
		{`{"text": "x"}`, `f.jsonl:2: no "label"`},
		{`{"text": "x", "label": [1]}`, `f.jsonl:2: "label": want a string or an integer, got [1]`},
		{`{"text": "x", "label": 1.5}`, `f.jsonl:2: "label": want a string or an integer, got 1.5`},
		{`{"text": "x", "label": ""}`, `f.jsonl:2: "label" is empty`},
		{`{"tokens": [1, 2], "targets": [2], "label": "a"}`, `f.jsonl:2: "targets": 1 values for 2 tokens`},
		{`{"tokens": [1, 2], "targets": "x", "label": "a"}`, `f.jsonl:2: "targets": want an array of integers, got "x"`},
		{`{"tokens": [1, 2], "targets": null, "label": "a"}`, `f.jsonl:2: "targets": want an array of integers, got null`},
	} {
		_, err := ParseRecords(strings.NewReader(`{"text": "ok", "label": "a"}`+"\n"+c.line+"\n"), "f.jsonl", true, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.line, err, c.want)
		}
	}
	if _, err := ParseRecords(strings.NewReader("\n\n"), "f.jsonl", false, true); err == nil || !strings.Contains(err.Error(), "no input lines") {
		t.Errorf("no lines: %v", err)
	}
}

func TestRecords(t *testing.T) {
	in := `{"text": "hi", "label": "b", "id": 7}

{"tokens": [300, 2], "label": 12}
plain line
{"text": "é", "label": "a"}`
	if _, err := ParseRecords(strings.NewReader(in), "f", true, false); err == nil || !strings.Contains(err.Error(), "f:4: not a JSON object") {
		t.Errorf("a plain line in a labelled file: %v", err)
	}
	recs, err := ParseRecords(strings.NewReader(in), "f", false, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{
		{Tokens: []int32{'h', 'i'}, Text: true, Label: "b", Where: "f:1"},
		{Tokens: []int32{300, 2}, Label: "12", Where: "f:3"},
		{Tokens: []int32{'p', 'l', 'a', 'i', 'n', ' ', 'l', 'i', 'n', 'e'}, Text: true, Where: "f:4"},
		{Tokens: []int32{0xc3, 0xa9}, Text: true, Label: "a", Where: "f:5"},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records", len(recs))
	}
	for i := range want {
		if !reflect.DeepEqual(recs[i], want[i]) {
			t.Errorf("record %d: %+v, want %+v", i, recs[i], want[i])
		}
	}
	// Label order: sorted, numerically when all are integers.
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{[]string{"spam", "ham", "eggs", "ham"}, "eggs ham spam"},
		{[]string{"10", "9", "-1", "9"}, "-1 9 10"},
		{[]string{"10", "9", "x"}, "10 9 x"},
	} {
		var rs []Record
		for _, l := range c.labels {
			rs = append(rs, Record{Label: l})
		}
		if got := strings.Join(LabelNames(rs), " "); got != c.want {
			t.Errorf("LabelNames(%v) = %s, want %s", c.labels, got, c.want)
		}
	}
}

// TestLabeledErrors: limits, labels and lengths are checked with the line.
func TestLabeledErrors(t *testing.T) {
	rec := func(where, label string, text bool, toks ...int32) Record {
		return Record{Tokens: toks, Text: text, Label: label, Where: where}
	}
	names := []string{"a", "b"}
	lim := Limits{Vocab: 260, MaxLen: 4, PadID: 256}
	ok := []Record{rec("t:1", "a", true, 1, 2), rec("t:2", "b", true, 3)}
	for _, c := range []struct {
		name       string
		train, val []Record
		lim        Limits
		want       string
	}{
		{"token outside the vocabulary", []Record{rec("t:3", "a", false, 1, 260)}, ok, lim, "t:3: token 260 outside the vocabulary [0, 260)"},
		{"negative token", []Record{rec("t:3", "a", false, -2)}, ok, lim, "t:3: token -2 outside"},
		{"too long", ok, []Record{rec("v:1", "a", true, 1, 2, 3, 4, 5)}, lim, "v:1: 5 tokens, longer than max_len 4"},
		{"pad_id in the byte range", ok, ok, Limits{Vocab: 256, MaxLen: 4, PadID: 0}, "t:1: text input needs a pad_id outside the byte range 0–255 (so vocab_size ≥ 257); the config's pad_id is 0"},
		{"unknown label", ok, []Record{rec("v:1", "c", true, 1)}, lim, `v:1: label "c" is not one of the training labels (a, b)`},
		{"lengths without pad_id", ok, ok, Limits{Vocab: 260, MaxLen: 4, PadID: -1}, "inputs have 1 to 2 tokens: different lengths need a pad_id"},
		{"too few to hold out", ok[:1], nil, lim, "too few to hold out"},
	} {
		_, err := NewLabeled(c.train, c.val, names, c.lim, 0.5, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	l, err := NewLabeled(ok, ok[:1], names, lim, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	tok, tg := make([]int32, 2), make([]int32, 1)
	l.Example(tok, tg, Train, 1)
	if l.Len(Train) != 2 || l.Len(Val) != 1 || l.ExampleLen(Train, 0) != 2 || tok[0] != 3 || tg[0] != 1 || l.Info().MaxLen != 2 {
		t.Errorf("task: %d/%d examples, example 1 %v → %v, info %+v", l.Len(Train), l.Len(Val), tok, tg, l.Info())
	}
}

// TestSequences: an lm's lines, with explicit targets (scored by accuracy)
// or the next tokens (bits per byte), the held-out split, and the errors.
func TestSequences(t *testing.T) {
	lim := Limits{Vocab: 10, MaxLen: 6, PadID: -1}
	parse := func(s string) []Record {
		t.Helper()
		recs, err := ParseRecords(strings.NewReader(s), "f.jsonl", false, false)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	next := parse("{\"tokens\": [1, 2, 3]}\n{\"tokens\": [4, 5, 6, 7]}\n{\"tokens\": [8, 9]}\n")
	task, err := NewSequences(next[:2], next[2:], lim, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	info := task.Info()
	if info.Mode != LM || !info.Causal || info.Metric != BitsPerByte || info.MaxLen != 4 || task.Len(Train) != 2 || task.Len(Val) != 1 {
		t.Fatalf("info %+v, %d train, %d val", info, task.Len(Train), task.Len(Val))
	}
	tok, tg := make([]int32, 4), make([]int32, 4)
	task.Example(tok, tg, Train, 1)
	if !reflect.DeepEqual(tok, []int32{4, 5, 6, 7}) || !reflect.DeepEqual(tg, []int32{5, 6, 7, -1}) {
		t.Errorf("derived targets: tokens %v, targets %v", tok, tg)
	}
	// Targets equal to the next tokens are still text; any other target
	// makes the metric accuracy.
	same := parse("{\"tokens\": [1, 2, 3], \"targets\": [2, 3, -1]}\n{\"tokens\": [4, 5]}\n")
	if task, err := NewSequences(same, nil, lim, 0.5, 1); err != nil || task.Info().Metric != BitsPerByte {
		t.Errorf("next-token targets: metric %v, err %v", task.Info().Metric, err)
	}
	query := parse("{\"tokens\": [1, 2, 3, 1], \"targets\": [-1, -1, -1, 2]}\n{\"tokens\": [4, 5]}\n{\"tokens\": [6, 7]}\n")
	task, err = NewSequences(query, nil, lim, 0.3, 1)
	if err != nil || task.Info().Metric != Accuracy || task.Len(Train)+task.Len(Val) != 3 || task.Len(Val) != 1 {
		t.Fatalf("query targets: %+v, err %v", task.Info(), err)
	}
	for _, c := range []struct{ lines, want string }{
		{"{\"tokens\": [1, 2], \"targets\": [-1, -1]}\n{\"tokens\": [1, 2]}\n", "f.jsonl:1: no target"},
		{"{\"tokens\": [1]}\n{\"tokens\": [1, 2]}\n", "f.jsonl:1: no target"},
		{"{\"tokens\": [1, 2], \"targets\": [12, -1]}\n{\"tokens\": [1, 2]}\n", "f.jsonl:1: target 12 outside the vocabulary"},
		{"{\"tokens\": [1, 2], \"targets\": [-2, 1]}\n{\"tokens\": [1, 2]}\n", "f.jsonl:1: target -2 outside the vocabulary"},
		{"{\"tokens\": [1, 2, 3, 4, 5, 6, 7]}\n{\"tokens\": [1, 2]}\n", "f.jsonl:1: 7 tokens, longer than max_len 6"},
		{"{\"tokens\": [1, 2], \"label\": \"a\"}\n{\"tokens\": [1, 2]}\n", `f.jsonl:1: a "label" in an lm's lines`},
	} {
		recs := parse(c.lines)
		if _, err := NewSequences(recs[:1], recs[1:], lim, 0, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.lines, err, c.want)
		}
	}
}
