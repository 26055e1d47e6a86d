package tokenmix

import (
	"context"
	"fmt"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
)

// Span is a labelled range of a text's bytes, [Start, End), that a tagger
// found, with Score the mean probability of its tokens' tags.
type Span struct {
	Start int     `json:"start"`
	End   int     `json:"end"`
	Label string  `json:"label"`
	Score float32 `json:"score"`
}

// Tag returns the labelled spans of each text, found by a tagger (task
// "tag", trained on JSONL lines {"text", "spans"}): each token gets its
// most probable BIO tag, and B- and I- tags of one label join into a
// span. Offsets are bytes of the text whatever the tokenizer; a span
// covers whole tokens. It needs a tagger; other errors as Logits.
func (m *Model) Tag(ctx context.Context, texts []string) ([][]Span, error) {
	offsets := data.Offsets(m.tok)
	seqs := make([][]int32, len(texts))
	offs := make([][][2]int, len(texts))
	for i, t := range texts {
		seqs[i], offs[i] = offsets([]byte(t))
	}
	return m.tag(ctx, seqs, offs)
}

// TagTokens is Tag on token sequences; offsets are bytes of their text
// (Decode).
func (m *Model) TagTokens(ctx context.Context, seqs [][]int32) ([][]Span, error) {
	offs := make([][][2]int, len(seqs))
	for i, s := range seqs {
		at := 0
		offs[i] = make([][2]int, len(s))
		for j, id := range s {
			n := len(m.appendText(nil, id))
			offs[i][j] = [2]int{at, at + n}
			at += n
		}
	}
	return m.tag(ctx, seqs, offs)
}

func (m *Model) tag(ctx context.Context, seqs [][]int32, offs [][][2]int) ([][]Span, error) {
	if m.cfg.Task != "tag" {
		return nil, fmt.Errorf("tokenmix: Tag needs a tagger (task \"tag\"), this model's task is %q", m.cfg.Task)
	}
	labels := m.spanLabels()
	C := m.cfg.NClasses
	out := make([][]Span, len(seqs))
	err := m.forEach(ctx, seqs, func(i int, logits []float32) {
		n := len(seqs[i])
		tags, probs := make([]int, n), make([]float32, n)
		for j := range n {
			p := data.Softmax(logits[j*C : (j+1)*C])
			tags[j] = data.Argmax(p)
			probs[j] = p[tags[j]]
		}
		spans := []Span{}
		for _, s := range data.Spans(tags, probs, offs[i], labels) {
			spans = append(spans, Span{Start: s.Start, End: s.End, Label: s.Label, Score: s.Score})
		}
		out[i] = spans
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// spanLabels is a tagger's span labels: its classes are data.TagNames of
// them (run.json's label_names), or, unnamed, one label per B-/I- pair.
func (m *Model) spanLabels() []string {
	var out []string
	if len(m.cfg.LabelNames) == m.cfg.NClasses {
		for _, t := range m.cfg.LabelNames {
			if l, ok := strings.CutPrefix(t, "B-"); ok {
				out = append(out, l)
			}
		}
		return out
	}
	for k := 1; k+1 < m.cfg.NClasses; k += 2 {
		out = append(out, fmt.Sprint((k-1)/2))
	}
	return out
}
