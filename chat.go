package tokenmix

import (
	"context"
	"fmt"
	"slices"

	"github.com/tokenmix/tokenmix/internal/chat"
)

// ChatPrompt renders messages through the model's chat template (its
// config's chat_template, or DefaultChatTemplate) into the prompt of the
// reply, and returns it with the end of a reply as tokens: the footer of
// an assistant message and the template's Stop ("\n<|" by default). It
// needs a causal lm; messages need a user turn and roles without line
// breaks.
func (m *Model) ChatPrompt(messages []Message) (prompt, stop []int32, err error) {
	if m.cfg.Task != "lm" || !m.cfg.Causal {
		what := "a classifier"
		if m.cfg.Task == "lm" {
			what = "a bidirectional lm"
		}
		return nil, nil, fmt.Errorf("tokenmix: chat needs a causal lm; this model is %s", what)
	}
	t := chat.Default
	if ct := m.net.Config.ChatTemplate; ct != nil {
		t = *ct
	}
	segs, err := t.Render(chatMessages(messages), false)
	if err != nil {
		return nil, nil, fmt.Errorf("tokenmix: %w", err)
	}
	prompt, _ = chat.Encode(segs, m.Encode)
	return prompt, m.Encode(t.ReplyEnd()), nil
}

// Chat continues a conversation with the reply of the assistant: Generate
// on the ChatPrompt of messages, stopping where the model ends its reply
// (besides o.Stop). The reply's text is Text(Tokens).
func (m *Model) Chat(ctx context.Context, messages []Message, o GenerateOptions) (*Result, error) {
	prompt, stop, err := m.ChatPrompt(messages)
	if err != nil {
		return nil, err
	}
	o.Stop = append(slices.Clone(o.Stop), stop)
	return m.Generate(ctx, prompt, o)
}
