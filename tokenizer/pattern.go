package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is a pre-tokenisation pattern: the rule that cuts text into the
// pieces that BPE then encodes one by one. Each is a hand-written scanner
// with the semantics of its regular expression (see the package doc).
type Pattern int

// The patterns.
const (
	// GPT2 is GPT-2's pattern (also r50k and p50k):
	//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
	GPT2 Pattern = iota + 1
	// CL100K is cl100k_base's pattern (also Llama 3's):
	//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	CL100K
	// O200K is o200k_base's pattern:
	//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
	//	|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
	//	|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
	O200K
	// Blocks cuts the text into blocks of lines: a block runs to the
	// first blank line and takes every '\n' that follows:
	//	[^\n]*(?:\n[^\n]+)*\n*
	// Merges may then cross spaces, punctuation and line ends, so one
	// token can be "\n\t\treturn nil, err\n\t}". On source code and logs
	// this packs more bytes into a token than the three word-level
	// patterns (docs/tokenizers.md); its pieces are longer, and encoding
	// is about 6× slower.
	Blocks
)

// The regular expressions of the patterns as tokenizer.json files and
// tiktoken write them; regexOf gives the one tokenmix writes.
var patternRegexes = map[Pattern][]string{
	GPT2: {`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`},
	CL100K: {
		`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
		// tiktoken's later spelling: possessive quantifiers, same pieces.
		`'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`,
		`'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`,
	},
	O200K: {
		`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	},
	Blocks: {`[^\n]*(?:\n[^\n]+)*\n*`},
}

// The names of the patterns, as flags and configs spell them.
var patternNames = map[Pattern]string{GPT2: "gpt2", CL100K: "cl100k", O200K: "o200k", Blocks: "blocks"}

// PatternNames lists the patterns' names, as flags and errors spell them.
const PatternNames = "gpt2, cl100k, o200k or blocks"

// String returns the pattern's name: gpt2, cl100k, o200k or blocks.
func (p Pattern) String() string {
	if n, ok := patternNames[p]; ok {
		return n
	}
	return fmt.Sprintf("Pattern(%d)", int(p))
}

// Regex returns the regular expression the pattern implements, in the
// spelling tokenmix writes into tokenizer.json files.
func (p Pattern) Regex() string {
	if r, ok := patternRegexes[p]; ok {
		return r[0]
	}
	return ""
}

// ParsePattern returns the pattern named name (gpt2, cl100k, o200k or
// blocks).
func ParsePattern(name string) (Pattern, error) {
	for p, n := range patternNames {
		if n == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown pattern %q (want %s)", name, PatternNames)
}

// patternOfRegex returns the pattern whose regular expression is re.
func patternOfRegex(re string) (Pattern, bool) {
	for p, rs := range patternRegexes {
		for _, r := range rs {
			if r == re {
				return p, true
			}
		}
	}
	return 0, false
}

// Pieces calls yield with each piece of text in order, until yield returns
// false. The pieces concatenate to text. Bytes that are not valid UTF-8
// are each a character of their own that is neither a letter, a number
// nor white space.
func (p Pattern) Pieces(text string, yield func(piece string) bool) {
	next := p.scanner()
	for len(text) > 0 {
		n := next(text)
		if !yield(text[:n]) {
			return
		}
		text = text[n:]
	}
}

// scanner returns the function that gives the length of the piece at the
// start of a non-empty string.
func (p Pattern) scanner() func(string) int {
	switch p {
	case GPT2:
		return nextGPT2
	case CL100K:
		return nextCL100K
	case O200K:
		return nextO200K
	case Blocks:
		return nextBlock
	}
	panic(fmt.Sprintf("tokenizer: invalid pattern %d", int(p)))
}

// Character classes. Every character has exactly one of cL, cN, cS and
// cO; the case and mark bits refine cL and cO.
const (
	cL  = 1 << iota // \p{L}
	cN              // \p{N}
	cS              // \s: Unicode White_Space
	cO              // none of the above
	cLu             // \p{Lu}
	cLl             // \p{Ll}
	cLt             // \p{Lt}
	cLm             // \p{Lm}
	cLo             // \p{Lo}
	cM              // \p{M}
	cNL             // \r or \n

	cUpper = cLu | cLt | cLm | cLo | cM // o200k's first letter class
	cLower = cLl | cLm | cLo | cM       // o200k's second letter class
)

var asciiClass [utf8.RuneSelf]uint16

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOf(r)
	}
}

func classOf(r rune) uint16 {
	switch {
	case unicode.IsLetter(r):
		c := uint16(cL)
		switch {
		case unicode.Is(unicode.Lu, r):
			c |= cLu
		case unicode.Is(unicode.Ll, r):
			c |= cLl
		case unicode.Is(unicode.Lt, r):
			c |= cLt
		case unicode.Is(unicode.Lm, r):
			c |= cLm
		default:
			c |= cLo
		}
		return c
	case unicode.IsNumber(r):
		return cN
	case unicode.IsSpace(r): // exactly White_Space, U+0085 included
		if r == '\r' || r == '\n' {
			return cS | cNL
		}
		return cS
	case unicode.Is(unicode.M, r):
		return cO | cM
	}
	return cO
}

// class returns the class of the character at the start of s and its
// width in bytes; s must not be empty. An invalid byte is one character
// of class cO.
func class(s string) (uint16, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return cO, 1
	}
	return classOf(r), n
}

// run returns the length of the longest prefix of s whose characters all
// have a bit of want.
func run(s string, want uint16) int {
	i := 0
	for i < len(s) {
		c, n := class(s[i:])
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// contraction returns the length of the contraction 's, 't, 're, 've, 'm,
// 'll or 'd at the start of s, or 0. With fold the letters match as
// Unicode's simple case folding does (so 'S and 'ſ match 's).
func contraction(s string, fold bool) int {
	if len(s) < 2 || s[0] != '\'' {
		return 0
	}
	for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
		if n := prefixFold(s[1:], c, fold); n > 0 {
			return 1 + n
		}
	}
	return 0
}

// prefixFold returns the length of the prefix of s that matches the ASCII
// letters of lower, or 0.
func prefixFold(s, lower string, fold bool) int {
	if !fold {
		if strings.HasPrefix(s, lower) {
			return len(lower)
		}
		return 0
	}
	i := 0
	for j := 0; j < len(lower); j++ {
		if i >= len(s) {
			return 0
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !foldsTo(r, rune(lower[j])) {
			return 0
		}
		i += n
	}
	return i
}

// foldsTo reports whether r is in the simple case-folding orbit of the
// ASCII lower-case letter l.
func foldsTo(r, l rune) bool {
	if r == l {
		return true
	}
	for f := unicode.SimpleFold(l); f != l; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return false
}

// whitespace scans the shared tail of every pattern,
// \s+(?!\S)|\s+ , at s, which starts with white space.
func whitespace(s string) int {
	n := run(s, cS)
	if n < len(s) {
		// Followed by a non-space: \s+(?!\S) backs off one character,
		// when that leaves one.
		_, w := lastRune(s[:n])
		if n-w > 0 {
			return n - w
		}
	}
	return n
}

// lastRune returns the class and width of the last character of s.
func lastRune(s string) (uint16, int) {
	r, n := utf8.DecodeLastRuneInString(s)
	if r == utf8.RuneError && n == 1 {
		return cO, 1
	}
	return classOf(r), n
}

// newlines scans \s*[\r\n]+ at s: the white space up to and including the
// last \r or \n of the white-space run at s, or 0.
func newlines(s string) int {
	n := run(s, cS)
	for i := n - 1; i >= 0; i-- {
		if s[i] == '\r' || s[i] == '\n' {
			return i + 1
		}
	}
	return 0
}

// optSpace scans " ?X" where X is the function given: with the space if X
// matches after it, else X alone.
func optSpace(s string, x func(string) int) int {
	if s[0] == ' ' && len(s) > 1 {
		if n := x(s[1:]); n > 0 {
			return 1 + n
		}
	}
	return x(s)
}

func letters(s string) int { return run(s, cL) }
func numbers(s string) int { return run(s, cN) }
func others(s string) int  { return run(s, cO) }

func nextGPT2(s string) int {
	if n := contraction(s, false); n > 0 {
		return n
	}
	c, _ := class(s)
	if c&cS == 0 || (s[0] == ' ' && len(s) > 1) {
		for _, x := range [...]func(string) int{letters, numbers, others} {
			if n := optSpace(s, x); n > 0 {
				return n
			}
		}
	}
	return whitespace(s)
}

// prefixed scans [^\r\n\p{L}\p{N}]?X: with the one-character prefix if X
// matches after it, else X alone.
func prefixed(s string, x func(string) int) int {
	c, w := class(s)
	if c&(cL|cN|cNL) == 0 && w < len(s) {
		if n := x(s[w:]); n > 0 {
			return w + n
		}
	}
	return x(s)
}

func nextCL100K(s string) int {
	if n := contraction(s, true); n > 0 {
		return n
	}
	if n := prefixed(s, letters); n > 0 {
		return n
	}
	if n := digits3(s); n > 0 {
		return n
	}
	if n := optSpace(s, othersNL); n > 0 {
		return n
	}
	if n := newlines(s); n > 0 {
		return n
	}
	return whitespace(s)
}

// digits3 scans \p{N}{1,3}.
func digits3(s string) int {
	i := 0
	for k := 0; k < 3 && i < len(s); k++ {
		c, n := class(s[i:])
		if c&cN == 0 {
			break
		}
		i += n
	}
	return i
}

// othersNL scans [^\s\p{L}\p{N}]+[\r\n]* (cl100k).
func othersNL(s string) int {
	n := others(s)
	if n == 0 {
		return 0
	}
	return n + tailRun(s[n:], false)
}

// othersSlash scans [^\s\p{L}\p{N}]+[\r\n/]* (o200k).
func othersSlash(s string) int {
	n := others(s)
	if n == 0 {
		return 0
	}
	return n + tailRun(s[n:], true)
}

// tailRun returns the length of the run of \r, \n (and, with slash, /) at s.
func tailRun(s string, slash bool) int {
	i := 0
	for i < len(s) && (s[i] == '\r' || s[i] == '\n' || (slash && s[i] == '/')) {
		i++
	}
	return i
}

// o200kUpperLower scans [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and then the optional contraction.
func o200kUpperLower(s string) int {
	n := run(s, cUpper)
	end := 0
	if m := run(s[n:], cLower); m > 0 {
		end = n + m
	} else {
		// Backtrack: the upper run's last character that is also of
		// the lower class ends the match.
		for i := n; i > 0; {
			c, w := lastRune(s[:i])
			if c&cLower != 0 {
				end = i
				break
			}
			i -= w
		}
	}
	if end == 0 {
		return 0
	}
	return end + contraction(s[end:], true)
}

// o200kUpperThenLower scans [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and then the optional contraction.
func o200kUpperThenLower(s string) int {
	n := run(s, cUpper)
	if n == 0 {
		return 0
	}
	n += run(s[n:], cLower)
	return n + contraction(s[n:], true)
}

func nextO200K(s string) int {
	if n := prefixed(s, o200kUpperLower); n > 0 {
		return n
	}
	if n := prefixed(s, o200kUpperThenLower); n > 0 {
		return n
	}
	if n := digits3(s); n > 0 {
		return n
	}
	if n := optSpace(s, othersSlash); n > 0 {
		return n
	}
	if n := newlines(s); n > 0 {
		return n
	}
	return whitespace(s)
}

// nextBlock is the Blocks pattern: up to the first "\n\n", then every
// '\n' after it.
func nextBlock(s string) int {
	i := strings.Index(s, "\n\n")
	if i < 0 {
		return len(s)
	}
	i += 2
	for i < len(s) && s[i] == '\n' {
		i++
	}
	return i
}
