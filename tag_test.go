package tokenmix_test

import (
	"context"
	"testing"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/mixer"
)

// TestTagGoTokens trains the built-in Go-token tagger (task gotags,
// AFT-conv over bytes with a window as wide as the 256-byte chunks,
// max_len 4096, the position embedding left at its initialisation: the
// tags depend on nearby bytes, not on where they are) and checks its span
// F1 on held-out files' chunks through Model.Tag; then a 4 KiB input tags
// in one pass into well-formed spans.
func TestTagGoTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tagger")
	}
	const spec = `{"name": "gotags", "len": 256, "max_train": 2000, "max_val": 64, "max_test": 200}`
	train, val, err := tokenmix.TaskData(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tokenmix.TrainConfig{MaxLen: 4096, Mixer: mixer.OptionsOf("aft_conv", map[string]any{"window": 255}), Train: tokenmix.TrainSettings{Steps: 2000, LR: 5e-3, Warmup: 20, EvalEvery: -1}}
	r, err := tokenmix.Train(context.Background(), cfg, train, tokenmix.WithValidation(val), tokenmix.WithFreeze("pos."))
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Model()
	if err != nil {
		t.Fatal(err)
	}
	g, err := data.NewGoTags(data.GoTagsConfig{Len: 256, MaxTrain: 2000, MaxVal: 64, MaxTest: 200})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	var gold [][]data.Span
	for i := range g.Len(data.Test) {
		texts = append(texts, string(g.Text(data.Test, i)))
		gold = append(gold, g.Spans(data.Test, i))
	}
	spans, err := m.Tag(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	pred := make([][]data.Span, len(spans))
	for i, ss := range spans {
		for _, s := range ss {
			pred[i] = append(pred[i], data.Span{Start: s.Start, End: s.End, Label: s.Label})
		}
	}
	p, rc, f1 := data.SpanScores(gold, pred)
	t.Logf("%s: span precision %.4f, recall %.4f, F1 %.4f on %d held-out chunks (%s; validation %v)", "aft_conv", p, rc, f1, len(texts), r.TrainTime(), r.Validation())
	if f1 < 0.9 {
		t.Errorf("span F1 %.4f, want ≥ 0.9", f1)
	}

	// One input of 4096 bytes: the chunks joined, their spans shifted.
	var long []byte
	var longGold []data.Span
	for i := 0; i < len(texts) && len(long)+len(texts[i]) <= 4096; i++ {
		for _, s := range gold[i] {
			longGold = append(longGold, data.Span{Start: s.Start + len(long), End: s.End + len(long), Label: s.Label})
		}
		long = append(long, texts[i]...)
	}
	for len(long) < 4096 {
		long = append(long, '\n')
	}
	got, err := m.Tag(context.Background(), []string{string(long)})
	if err != nil {
		t.Fatal(err)
	}
	var lp []data.Span
	for _, s := range got[0] {
		lp = append(lp, data.Span{Start: s.Start, End: s.End, Label: s.Label})
	}
	_, _, lf1 := data.SpanScores([][]data.Span{longGold}, [][]data.Span{lp})
	t.Logf("a %d-byte input in one pass: %d spans, span F1 %.4f (trained on 256-byte chunks)", len(long), len(lp), lf1)
	for i, s := range lp {
		if s.Start < 0 || s.End > len(long) || s.Start >= s.End || i > 0 && s.Start < lp[i-1].End {
			t.Fatalf("span %d %+v of the 4 KiB input is out of order or out of range", i, s)
		}
	}
}
