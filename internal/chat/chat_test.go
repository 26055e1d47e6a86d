package chat

import (
	"strings"
	"testing"
)

func text(segs []Segment, target bool) string {
	var b strings.Builder
	for _, s := range segs {
		if !target || s.Target {
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// TestDefault pins the default template: the prompt, and what training
// scores.
func TestDefault(t *testing.T) {
	msgs := []Message{{"system", "be brief"}, {"user", "hi"}, {"assistant", "hello"}, {"user", "bye"}, {"assistant", "ciao"}}
	p, err := Default.Render(msgs[:4], false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(p, false), "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\nhello\n<|user|>\nbye\n<|assistant|>\n"; got != want {
		t.Errorf("prompt %q, want %q", got, want)
	}
	tr, err := Default.Render(msgs, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := text(tr, false), "<|system|>\nbe brief\n<|user|>\nhi\n<|assistant|>\nhello\n<|user|>\nbye\n<|assistant|>\nciao\n<|"; got != want {
		t.Errorf("training text %q, want %q", got, want)
	}
	if got, want := text(tr, true), "hello\n<|ciao\n<|"; got != want {
		t.Errorf("scored %q, want %q", got, want)
	}
	ids, target := Encode(tr, func(s string) []int32 {
		out := make([]int32, len(s))
		for i := range s {
			out[i] = int32(s[i])
		}
		return out
	})
	n := 0
	for _, b := range target {
		if b {
			n++
		}
	}
	if len(ids) != len(text(tr, false)) || n != len("hello\n<|ciao\n<|") {
		t.Errorf("Encode: %d ids, %d targets", len(ids), n)
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		json, want string
	}{
		{`{"message": "{role}: no content"}`, "want {content} exactly once"},
		{`{"message": "{content}{content}"}`, "exactly once, got 2"},
		{`{"message": "<{rol}>{content}"}`, "unknown placeholder {rol}"},
		{`{"prompt": "{role}"}`, "chat_template.prompt: unknown placeholder {role}"},
		{`{"stop": ""}`, "chat_template.stop: empty"},
		{`{"stopp": "x"}`, "chat_template"},
		{`{"message": 3}`, "chat_template"},
		{`[]`, "chat_template"},
	} {
		if _, err := Parse([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s): %v, want %q", c.json, err, c.want)
		}
	}
	if tm, err := Parse([]byte(`{"message": "### {role}\n{content}\n", "stop": "###"}`)); err != nil || tm.Prompt != Default.Prompt {
		t.Errorf("a partial template: %+v, %v", tm, err)
	}
	for _, c := range []struct {
		msgs  []Message
		train bool
		want  string
	}{
		{nil, false, "messages: empty"},
		{[]Message{{"", "x"}}, false, "messages[0]: no role"},
		{[]Message{{"us\ner", "x"}}, false, "line break"},
		{[]Message{{"system", "x"}}, false, "no user turn"},
		{[]Message{{"user", "x"}}, true, "no assistant turn"},
	} {
		if _, err := Default.Render(c.msgs, c.train); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Render(%v): %v, want %q", c.msgs, err, c.want)
		}
	}
}
