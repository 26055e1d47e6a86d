package tokenmix

import (
	"strings"
	"unicode/utf8"
)

// TextStream turns generated tokens into text as they come, as a streamed
// completion needs it: each Next returns the characters that are now
// whole, holding back the start of a UTF-8 character that a later token
// may complete (a character can span several tokens of a subword
// tokenizer, and several byte tokens). Bytes that cannot form valid UTF-8,
// and ids that are no token, become U+FFFD. The texts Next and Flush
// return concatenate to Model.Text of the same ids.
type TextStream struct {
	m    *Model
	held []byte
}

// NewTextStream returns an empty TextStream for m's tokens.
func (m *Model) NewTextStream() *TextStream { return &TextStream{m: m} }

// Next adds token id and returns the text it completes.
func (t *TextStream) Next(id int32) string {
	if t.m.checkText([]int32{id}) != nil {
		return t.Flush() + "\uFFFD"
	}
	var b strings.Builder
	t.held = decodeText(&b, t.m.appendText(t.held, id), false)
	return b.String()
}

// Flush returns the bytes held back, each as U+FFFD unless they form
// valid characters, and empties the stream.
func (t *TextStream) Flush() string {
	var b strings.Builder
	decodeText(&b, t.held, true)
	t.held = t.held[:0]
	return b.String()
}

// Text is the text of ids as TextStream gives it: valid UTF-8, with
// U+FFFD for bytes that do not form characters and for ids that are no
// token. Decode gives the exact bytes instead.
func (m *Model) Text(ids []int32) string {
	t := m.NewTextStream()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(t.Next(id))
	}
	b.WriteString(t.Flush())
	return b.String()
}

// decodeText writes the characters of p to b, each byte that is not part
// of valid UTF-8 as U+FFFD, and returns the tail it leaves: a character
// not yet complete, unless final. The tail is p's own memory moved to its
// front.
func decodeText(b *strings.Builder, p []byte, final bool) []byte {
	q := p
	for len(q) > 0 && (final || utf8.FullRune(q)) {
		r, size := utf8.DecodeRune(q)
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.Write(q[:size])
		}
		q = q[size:]
	}
	return append(p[:0], q...)
}
