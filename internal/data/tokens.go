package data

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/chat"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// TextOf is text as a model reads it: its bytes, or the ids of tk.
func TextOf(b []byte, tk *tokenizer.Tokenizer) Text {
	if tk == nil {
		return BytesText(b)
	}
	return IDText(EncodeIDs(tk, string(b)))
}

// EncodeIDs is tk's ids of s as int32.
func EncodeIDs(tk *tokenizer.Tokenizer, s string) []int32 {
	ids := tk.Encode(s)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// Retokenize replaces the byte tokens of the "text" records by tk's ids;
// with tk nil it leaves them as they are.
func Retokenize(recs []Record, tk *tokenizer.Tokenizer) {
	if tk == nil {
		return
	}
	enc := func(ids []int32) []int32 {
		if ids == nil {
			return nil
		}
		b := make([]byte, len(ids))
		for j, t := range ids {
			b[j] = byte(t)
		}
		return EncodeIDs(tk, string(b))
	}
	for i := range recs {
		if r := &recs[i]; r.Text && r.Spans == nil { // a tagged text is encoded by TagTargets
			r.Tokens, r.Positive, r.Negative = enc(r.Tokens), enc(r.Positive), enc(r.Negative)
		}
	}
}

// NewTextWindows is text as the validation split of a task, in windows of
// T tokens with at least context tokens of context per scored token (0:
// fixed windows): what training validates on and `tokenmix eval` scores.
// With a tokenizer, the task's bits per byte count each token's bytes.
func NewTextWindows(text Text, T, context int, tk *tokenizer.Tokenizer) (*TextTask, error) {
	w, err := NewWindows(text, T, context)
	if err != nil {
		return nil, err
	}
	task := NewTextTask("text", nil, w, nil)
	if tk != nil {
		task.WithTokens(tk.TokenLens())
	}
	return task, nil
}

// Encoder is the ids of text for a model: its bytes, or the ids of tk.
func Encoder(tk *tokenizer.Tokenizer) func(string) []int32 {
	if tk != nil {
		return func(s string) []int32 { return EncodeIDs(tk, s) }
	}
	return func(s string) []int32 { return bytesToIDs([]byte(s)) }
}

// RenderChat renders the conversations of recs (Record.Messages) with t
// into their Tokens, through enc, and Targets: the next token where it
// belongs to what training scores (chat.Template.Render), −1 elsewhere.
// An error names the record.
func RenderChat(recs []Record, t chat.Template, enc func(string) []int32) error {
	for i := range recs {
		r := &recs[i]
		if r.Messages == nil {
			continue
		}
		segs, err := t.Render(r.Messages, true)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Where, err)
		}
		ids, target := chat.Encode(segs, enc)
		r.Tokens, r.Targets = ids, make([]int32, len(ids))
		for j := range ids {
			r.Targets[j] = -1
			if j+1 < len(ids) && target[j+1] {
				r.Targets[j] = ids[j+1]
			}
		}
	}
	return nil
}

// Offsets is the tokenizer of text for tagging: the ids of text (its
// bytes, or tk's ids) and each one's [start, end) bytes in it.
func Offsets(tk *tokenizer.Tokenizer) func(text []byte) ([]int32, [][2]int) {
	return func(text []byte) ([]int32, [][2]int) {
		if tk == nil {
			ids, off := make([]int32, len(text)), make([][2]int, len(text))
			for i, b := range text {
				ids[i], off[i] = int32(b), [2]int{i, i + 1}
			}
			return ids, off
		}
		ids := EncodeIDs(tk, string(text))
		off := make([][2]int, len(ids))
		at := 0
		for i, id := range ids {
			s, _ := tk.Token(int(id))
			off[i] = [2]int{at, at + len(s)}
			at += len(s)
		}
		return ids, off
	}
}
