package data

import (
	"slices"
	"testing"
)

func TestRecall(t *testing.T) {
	for _, c := range []RecallConfig{
		{Len: 9, Pairs: 4, Keys: 4, Values: 4, Train: 200, Val: 20, Test: 20}, // dense: no filler
		{Len: 64, Pairs: 5, Keys: 10, Values: 7, Train: 200, Val: 20, Test: 20},
		{Len: 40, Pairs: 6, Queries: 8, Keys: 12, Values: 6, Train: 200, Val: 20, Test: 20},
		{Len: 1000, Pairs: 16, Train: 50, Val: 5, Test: 5},
	} {
		r, err := NewRecall(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg := r.Config()
		info := r.Info()
		tok := make([]int32, cfg.Len)
		tg := make([]int32, cfg.Len)
		var answers = map[int32]int{}
		for s := Train; s <= Test; s++ {
			for i := range r.Len(s) {
				r.Example(tok, tg, s, i)
				val := map[int32]int32{} // key → value
				seenVal := map[int32]bool{}
				fill := 0
				nq := cfg.Queries
				for j := 0; j < cfg.Len-nq; j++ {
					switch v := tok[j]; {
					case v == RecallFiller:
						fill++
					case v >= RecallKey0 && v < int32(RecallKey0+cfg.Keys):
						if _, dup := val[v]; dup {
							t.Fatalf("%s %d: key %d twice", s, i, v)
						}
						nv := tok[j+1]
						if nv < int32(RecallKey0+cfg.Keys) || nv >= int32(info.Vocab) {
							t.Fatalf("%s %d: key at %d not followed by a value", s, i, j)
						}
						if seenVal[nv] {
							t.Fatalf("%s %d: value %d twice", s, i, nv)
						}
						seenVal[nv] = true
						val[v] = nv
						j++
					default:
						t.Fatalf("%s %d: stray token %d at %d", s, i, v, j)
					}
				}
				if len(val) != cfg.Pairs || fill != cfg.Len-nq-2*cfg.Pairs {
					t.Fatalf("%s %d: %d pairs, %d fillers", s, i, len(val), fill)
				}
				for j := cfg.Len - nq; j < cfg.Len; j++ {
					q := tok[j]
					if tg[j] != val[q] || val[q] == 0 {
						t.Fatalf("%s %d: target %d at %d, value of query %d is %d", s, i, tg[j], j, q, val[q])
					}
					answers[tg[j]]++
				}
				for j := 0; j < cfg.Len-nq; j++ {
					if tg[j] != -1 {
						t.Fatalf("%s %d: target at %d", s, i, j)
					}
				}
			}
		}
		if len(answers) != cfg.Values && cfg.Values <= 7 {
			t.Errorf("%+v: answers use %d of %d values", c, len(answers), cfg.Values)
		}
	}
}

func TestRecallDeterministic(t *testing.T) {
	r, _ := NewRecall(RecallConfig{Len: 32, Pairs: 4, Seed: 5})
	q, _ := NewRecall(RecallConfig{Len: 32, Pairs: 4, Seed: 6})
	ex := func(r *Recall, s Split, i int) []int32 {
		tok, tg := make([]int32, 32), make([]int32, 32)
		r.Example(tok, tg, s, i)
		return tok
	}
	if !slices.Equal(ex(r, Train, 3), ex(r, Train, 3)) {
		t.Error("same example differs")
	}
	if slices.Equal(ex(r, Train, 3), ex(r, Test, 3)) || slices.Equal(ex(r, Train, 3), ex(q, Train, 3)) {
		t.Error("different splits or seeds give the same example")
	}
	for _, c := range []RecallConfig{{Len: 8, Pairs: 4}, {Len: 10, Pairs: 4, Queries: 3}, {Pairs: 10, Keys: 5}, {Pairs: 4, Values: 3}, {Values: 1}} {
		if _, err := NewRecall(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
