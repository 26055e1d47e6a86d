package tokenmix_test

import (
	"context"
	"testing"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/mixer"
)

// TestTagGoTokens trains the built-in Go-token tagger (task gotags,
// AFT-conv over bytes as a sliding window of ±127 bytes ("distant":
// false), max_len 4096, the position embedding left at its
// initialisation: the tags depend on nearby bytes, not on where they are)
// and checks its span F1 on held-out files' chunks through Model.Tag; then
// held-out 4 KiB inputs tag in one pass each, into well-formed spans, at
// nearly the 256-byte chunks' F1.
func TestTagGoTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tagger")
	}
	const spec = `{"name": "gotags", "len": 256, "max_train": 2000, "max_val": 64, "max_test": 200}`
	train, val, err := tokenmix.TaskData(spec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tokenmix.TrainConfig{MaxLen: 4096, Mixer: mixer.OptionsOf("aft_conv", map[string]any{"window": 255, "distant": false}), Train: tokenmix.TrainSettings{Steps: 2000, LR: 5e-3, Warmup: 20, EvalEvery: -1}}
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

	// The held-out files' whole 4096-byte chunks, each tagged in one pass.
	lg, err := data.NewGoTags(data.GoTagsConfig{Len: 4096, MaxTrain: 1, MaxVal: 1})
	if err != nil {
		t.Fatal(err)
	}
	var longs []string
	var longGold [][]data.Span
	for i := 0; i < lg.Len(data.Test) && len(longs) < 8; i++ {
		if txt := lg.Text(data.Test, i); len(txt) == 4096 {
			longs = append(longs, string(txt))
			longGold = append(longGold, lg.Spans(data.Test, i))
		}
	}
	if len(longs) < 4 {
		t.Fatalf("%d held-out chunks of 4096 bytes, want at least 4", len(longs))
	}
	// Each input whole, and cut into the 256-byte pieces the tagger
	// trained on (their spans shifted back; spans across a cut break).
	got, err := m.Tag(context.Background(), longs)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for _, txt := range longs {
		for o := 0; o < len(txt); o += 256 {
			pieces = append(pieces, txt[o:min(o+256, len(txt))])
		}
	}
	gotPieces, err := m.Tag(context.Background(), pieces)
	if err != nil {
		t.Fatal(err)
	}
	lp, pp := make([][]data.Span, len(got)), make([][]data.Span, len(got))
	for i, ss := range got {
		for j, s := range ss {
			if s.Start < 0 || s.End > len(longs[i]) || s.Start >= s.End || j > 0 && s.Start < ss[j-1].End {
				t.Fatalf("span %d %+v of long input %d is out of order or out of range", j, s, i)
			}
			lp[i] = append(lp[i], data.Span{Start: s.Start, End: s.End, Label: s.Label})
		}
		for k := range 4096 / 256 {
			for _, s := range gotPieces[i*16+k] {
				pp[i] = append(pp[i], data.Span{Start: s.Start + 256*k, End: s.End + 256*k, Label: s.Label})
			}
		}
	}
	lprec, lrec, lf1 := data.SpanScores(longGold, lp)
	_, _, pf1 := data.SpanScores(longGold, pp)
	t.Logf("%d held-out inputs of 4096 bytes, each in one pass: span precision %.4f, recall %.4f, F1 %.4f; in 256-byte pieces F1 %.4f (trained on 256-byte chunks)", len(longs), lprec, lrec, lf1, pf1)
	if lf1 < pf1-0.01 || lf1 < 0.75 {
		t.Errorf("span F1 %.4f on the 4 KiB inputs in one pass, %.4f in 256-byte pieces: want ≥ 0.75 and no worse than the pieces (a sliding window reads a long input as it read the chunks)", lf1, pf1)
	}
}
