package chat

import (
	"strings"
	"testing"
)

// FuzzTemplate: any chat_template object parses to a template that
// checks, or to an error naming chat_template; a template that parses
// renders any conversation without panicking, and its prompt ends with
// the template's prompt.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{`{}`, `{"message": "### {role}\n{content}\n", "stop": "###"}`, `{"message": "{content}{role}{x}"}`,
		`{"prompt": "{", "stop": "}"}`, `{"message": "{{content}}"}`, `null`, `[`} {
		f.Add([]byte(s), "user", "hi {content}")
	}
	f.Fuzz(func(t *testing.T, b []byte, role, content string) {
		tm, err := Parse(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "chat_template") {
				t.Fatalf("error %q does not name chat_template", err)
			}
			return
		}
		if err := tm.Check(); err != nil {
			t.Fatalf("Parse gave a template that does not check: %v", err)
		}
		msgs := []Message{{role, content}, {"user", content}, {"assistant", content}}
		segs, err := tm.Render(msgs, false)
		if err != nil {
			return // the role
		}
		if last := segs[len(segs)-1]; last.Text != tm.Prompt {
			t.Fatalf("prompt ends with %q, want %q", last.Text, tm.Prompt)
		}
		if _, err := tm.Render(msgs, true); err != nil {
			t.Fatalf("training render: %v", err)
		}
	})
}
