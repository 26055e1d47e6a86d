package tokenmix

import "testing"

// TestTextUTF8: bytes that do not form UTF-8 become U+FFFD, the same
// whether the text is taken whole or token by token.
func TestTextUTF8(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		want string
	}{
		{[]int32{'h', 'i'}, "hi"},
		{[]int32{0xc3, 0xa9}, "é"},
		{[]int32{0xe2, 0x82, 0xac, '!'}, "€!"},
		{[]int32{0xff, 'a'}, "\uFFFDa"},
		{[]int32{0xe2, 0x82}, "\uFFFD\uFFFD"}, // cut short at the end
		{[]int32{0xe2, 'a', 0x82}, "\uFFFDa\uFFFD"},
		{[]int32{'a', 300, 'b'}, "a\uFFFDb"}, // a token above 255
	} {
		m := &Model{} // byte-level
		if got := m.Text(c.ids); got != c.want {
			t.Errorf("Text(%v) = %q, want %q", c.ids, got, c.want)
		}
		var pieces string
		ts := m.NewTextStream()
		for _, id := range c.ids {
			pieces += ts.Next(id)
		}
		if pieces += ts.Flush(); pieces != c.want {
			t.Errorf("token by token %v = %q, want %q", c.ids, pieces, c.want)
		}
	}
}
