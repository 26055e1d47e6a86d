package data

import (
	"slices"
	"testing"
)

func TestListOpsEval(t *testing.T) {
	// Values worked out by hand.
	for _, c := range []struct {
		expr string
		want int
	}{
		{"7", 7},
		{"[MIN 3 9 1 ]", 1},
		{"[MAX 3 9 1 ]", 9},
		{"[MED 3 9 1 ]", 3},
		{"[MED 3 8 ]", 5},     // (3+8)/2 = 5.5, floored
		{"[MED 1 2 9 9 ]", 5}, // middle values 2 and 9: 5.5 floored
		{"[MED 0 1 ]", 0},     // 0.5 floored
		{"[SM 5 6 7 ]", 8},    // 18 mod 10
		{"[SM 0 0 ]", 0},      //
		{"[MAX 2 9 [MIN 4 7 ] 0 ]", 9},
		{"[SM [MAX 1 2 ] [MIN 8 9 ] [MED 4 4 5 5 ] ]", 4}, // 2+8+4 = 14
		{"[MIN [MAX [SM 9 9 ] 3 ] 5 ]", 5},                // SM=8, MAX=8, MIN(8,5)=5
	} {
		toks, err := ListOpsParse(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if s := ListOpsString(toks); s != c.expr {
			t.Errorf("round trip: %q became %q", c.expr, s)
		}
		got, err := ListOpsEval(toks)
		if err != nil || got != c.want {
			t.Errorf("%q = %d, %v; want %d", c.expr, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "[MIN 1 2", "1 2", "[MIN 1 ] ]", "[MAX ]"} {
		toks, _ := ListOpsParse(bad)
		if _, err := ListOpsEval(toks); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := ListOpsParse("[FIRST 1 ]"); err == nil {
		t.Error(`ListOpsParse("[FIRST 1 ]"): no error`)
	}
}

func TestListOpsGenerator(t *testing.T) {
	for _, c := range []ListOpsConfig{
		{Train: 3000, Val: 100, Test: 100, Seed: 1}, // LRA bounds 500, 2000
		{Train: 500, Val: 50, Test: 50, MinLen: 20, MaxLen: 100, Seed: 2},
	} {
		l, err := NewListOps(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg := l.Config()
		seen := map[string]bool{}
		var counts [10]int
		tok := make([]int32, cfg.MaxLen)
		tg := make([]int32, 1)
		for s := Train; s <= Test; s++ {
			if l.Len(s) != [3]int{c.Train, c.Val, c.Test}[s] {
				t.Fatalf("%s: %d examples", s, l.Len(s))
			}
			for i := range l.Len(s) {
				n := l.ExampleLen(s, i)
				if n <= cfg.MinLen || n >= cfg.MaxLen {
					t.Fatalf("%s %d: %d tokens, want in (%d, %d)", s, i, n, cfg.MinLen, cfg.MaxLen)
				}
				l.Example(tok[:n], tg, s, i)
				v, err := ListOpsEval(tok[:n])
				if err != nil || int32(v) != tg[0] {
					t.Fatalf("%s %d: label %d, evaluator %d, %v", s, i, tg[0], v, err)
				}
				key := ListOpsString(tok[:n])
				if seen[key] {
					t.Fatalf("%s %d: duplicate", s, i)
				}
				seen[key] = true
				if s == Train {
					counts[tg[0]]++
				}
			}
		}
		// LRA reports a majority class of about 17%.
		maj := float64(slices.Max(counts[:])) / float64(c.Train)
		if maj < 0.13 || maj > 0.24 {
			t.Errorf("bounds %d–%d: majority class %.3f, want about 0.17 (counts %v)", cfg.MinLen, cfg.MaxLen, maj, counts)
		}
		t.Logf("bounds %d–%d: class counts %v, majority %.3f", cfg.MinLen, cfg.MaxLen, counts, maj)
	}
}

func TestListOpsDeterministic(t *testing.T) {
	gen := func(seed uint64) *ListOps {
		l, err := NewListOps(ListOpsConfig{Train: 40, Val: 5, Test: 5, MinLen: 10, MaxLen: 200, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b, c := gen(7), gen(7), gen(8)
	if !slices.Equal(a.toks, b.toks) || !slices.Equal(a.labels[Train], b.labels[Train]) {
		t.Error("same seed, different data")
	}
	if slices.Equal(a.toks, c.toks) {
		t.Error("different seeds, same data")
	}
}

func TestListOpsConfigErrors(t *testing.T) {
	for _, c := range []ListOpsConfig{
		{MinLen: 10, MaxLen: 5},
		{Train: -1},
		{MaxDepth: 1},
		{MaxArgs: 1},
	} {
		if _, err := NewListOps(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func BenchmarkListOpsLRA(b *testing.B) {
	for range b.N {
		if _, err := NewListOps(ListOpsConfig{Train: 1000, Val: 1, Test: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestListOpsCache(t *testing.T) {
	c := ListOpsConfig{Train: 30, Val: 5, Test: 5, MinLen: 10, MaxLen: 100, Seed: 9}
	l, err := NewListOps(c)
	if err != nil {
		t.Fatal(err)
	}
	p := t.TempDir() + "/listops.gob"
	if err := SaveListOps(p, l); err != nil {
		t.Fatal(err)
	}
	m, err := LoadListOps(p, c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.toks, m.toks) || !slices.Equal(l.labels[Test], m.labels[Test]) || !slices.Equal(l.off[Val], m.off[Val]) {
		t.Error("cache round trip differs")
	}
	c.Seed = 10
	if _, err := LoadListOps(p, c); err == nil {
		t.Error("cache for another config accepted")
	}
}

// TestListOpsBaselines checks the lookup-table classifiers on a hand-made
// dataset whose answers are worked out in the comments.
func TestListOpsBaselines(t *testing.T) {
	l := &ListOps{}
	add := func(s Split, exprs ...string) {
		l.off[s] = []int{len(l.toks)}
		for _, e := range exprs {
			toks, err := ListOpsParse(e)
			if err != nil {
				t.Fatal(err)
			}
			v, err := ListOpsEval(toks)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range toks {
				l.toks = append(l.toks, uint8(x))
			}
			l.off[s] = append(l.off[s], len(l.toks))
			l.labels[s] = append(l.labels[s], int8(v))
		}
	}
	// Train labels 9 3 4 0 2 2: majority 2; MAX → 3 (tie of 9, 3, 4: the
	// smallest), MIN → 2; (MAX,9) → 9, (MAX,3) → 3, (MIN,0) → 0, (MIN,2) → 2.
	add(Train, "[MAX 9 [MIN 1 2 ] ]", "[MAX 3 [MIN 1 2 ] ]", "[MAX 3 4 ]", "[MIN 0 5 ]", "[MIN 2 5 ]", "[MIN 2 6 ]")
	// Test labels 9 2 8 3. Majority: only 2 right. Root operator: 3 2 3 and
	// no prediction for the unseen SM: only 2 right. With the first
	// argument: 9 2 3 and none: two right.
	add(Test, "[MAX 9 1 ]", "[MIN 2 7 ]", "[MAX 3 8 ]", "[SM 1 2 ]")
	want := []float64{0.25, 0.25, 0.5}
	got := l.Baselines()
	if len(got) != len(want) {
		t.Fatalf("%d baselines, want %d", len(got), len(want))
	}
	for i, b := range got {
		if b.Accuracy != want[i] || b.Name == "" || b.Note == "" {
			t.Errorf("baseline %d: %+v, want accuracy %v", i, b, want[i])
		}
	}
}
