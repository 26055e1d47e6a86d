// Package chat renders conversations into the text a causal lm reads and
// writes: a Template (a run's config key "chat_template", or Default)
// turns each message into a header, its content and a footer, and ends a
// prompt with the header of the reply; a reply ends where the model writes
// the template's Stop. Training on conversations (`tokenmix train` on
// JSONL lines with "messages") scores the assistant's tokens only: each
// assistant message's content and footer, and the Stop that follows it.
//
// Rendering is by segments, each encoded on its own, so that a message's
// tokens never merge with its header's and training and inference see
// the same ids.
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Template renders messages. Message holds {role} (optional, at most once)
// and {content} (exactly once); Prompt (the reply's header) and Stop hold
// no placeholder. Stop is not empty.
type Template struct {
	Message string `json:"message"`
	Prompt  string `json:"prompt"`
	Stop    string `json:"stop"`
}

// Default is the template of a run that names none: each message as
// <|role|>, a newline, the content and a newline; the prompt for the
// reply is <|assistant|> and a newline, and a reply ends at the next <|.
var Default = Template{Message: "<|{role}|>\n{content}\n", Prompt: "<|assistant|>\n", Stop: "<|"}

// Parse reads a "chat_template" object: keys message, prompt and stop,
// each a string, those left out taking Default's. Errors name the key.
func Parse(b []byte) (Template, error) {
	t := Default
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&t); err != nil {
		return t, fmt.Errorf("chat_template: %v (want an object of strings message, prompt and stop)", err)
	}
	return t, t.Check()
}

// Check returns an error naming the first problem of t.
func (t Template) Check() error {
	if n := strings.Count(t.Message, "{content}"); n != 1 {
		return fmt.Errorf("chat_template.message: want {content} exactly once, got %d times in %q", n, t.Message)
	}
	if strings.Count(t.Message, "{role}") > 1 {
		return fmt.Errorf("chat_template.message: {role} more than once in %q", t.Message)
	}
	rest := strings.NewReplacer("{content}", "", "{role}", "").Replace(t.Message)
	for _, f := range []struct{ key, s string }{{"message", rest}, {"prompt", t.Prompt}, {"stop", t.Stop}} {
		if p := placeholder(f.s); p != "" {
			return fmt.Errorf("chat_template.%s: unknown placeholder %s (message has {role} and {content}; prompt and stop have none)", f.key, p)
		}
	}
	if t.Stop == "" {
		return fmt.Errorf("chat_template.stop: empty (a reply would never end)")
	}
	return nil
}

// placeholder returns the first {word} of s, or "".
func placeholder(s string) string {
	for i := strings.IndexByte(s, '{'); i >= 0; {
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return ""
		}
		w := s[i+1 : i+j]
		if w != "" && strings.IndexFunc(w, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }) < 0 {
			return s[i : i+j+1]
		}
		k := strings.IndexByte(s[i+1:], '{')
		if k < 0 {
			return ""
		}
		i += 1 + k
	}
	return ""
}

// ReplyEnd is the text that ends a reply: an assistant message's footer
// and Stop.
func (t Template) ReplyEnd() string {
	_, foot, _ := strings.Cut(t.Message, "{content}")
	return strings.Replace(foot, "{role}", "assistant", 1) + t.Stop
}

// Segment is a piece of rendered text; Target marks the text training
// scores.
type Segment struct {
	Text   string
	Target bool
}

// CheckMessages returns an error naming the first problem of msgs: none,
// an empty or multi-line role, or no user turn.
func CheckMessages(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("messages: empty")
	}
	user := false
	for i, m := range msgs {
		switch {
		case m.Role == "":
			return fmt.Errorf("messages[%d]: no role", i)
		case strings.ContainsAny(m.Role, "\n\r"):
			return fmt.Errorf("messages[%d]: role %q has a line break", i, m.Role)
		}
		user = user || m.Role == "user"
	}
	if !user {
		return fmt.Errorf("messages: no user turn")
	}
	return nil
}

// Render is msgs as segments. For training (train set), the assistant
// messages' content and footer are targets, and so is the template's
// Stop after each: the start of the next header when it begins with
// Stop, and appended after a last assistant message; a conversation
// without an assistant message is an error. For a prompt (train false),
// nothing is a target and the reply's header ends the text.
func (t Template) Render(msgs []Message, train bool) ([]Segment, error) {
	if err := CheckMessages(msgs); err != nil {
		return nil, err
	}
	head, foot, _ := strings.Cut(t.Message, "{content}")
	var segs []Segment
	pendingStop := false // the previous message was the assistant's
	answered := false
	for _, m := range msgs {
		h := strings.Replace(head, "{role}", m.Role, 1)
		if pendingStop && strings.HasPrefix(h, t.Stop) {
			segs = append(segs, Segment{Text: t.Stop, Target: true})
			h = h[len(t.Stop):]
		}
		a := train && m.Role == "assistant"
		segs = append(segs, Segment{Text: h}, Segment{Text: m.Content, Target: a}, Segment{Text: strings.Replace(foot, "{role}", m.Role, 1), Target: a})
		pendingStop, answered = a, answered || a
	}
	if !train {
		return append(segs, Segment{Text: t.Prompt}), nil
	}
	if !answered {
		return nil, fmt.Errorf("messages: no assistant turn to learn from")
	}
	if pendingStop {
		segs = append(segs, Segment{Text: t.Stop, Target: true})
	}
	return segs, nil
}

// Encode encodes segs, each on its own with enc, and returns the ids and
// for each id whether it belongs to a target segment.
func Encode(segs []Segment, enc func(string) []int32) (ids []int32, target []bool) {
	for _, s := range segs {
		if s.Text == "" {
			continue
		}
		e := enc(s.Text)
		ids = append(ids, e...)
		for range e {
			target = append(target, s.Target)
		}
	}
	return ids, target
}
