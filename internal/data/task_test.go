package data

import (
	"slices"
	"testing"
)

func TestFillPads(t *testing.T) {
	l, err := NewListOps(ListOpsConfig{Train: 10, Val: 2, Test: 2, MinLen: 5, MaxLen: 60, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	idx := []int{3, 0, 7}
	Fill(&b, l, Train, idx, 0)
	want := 0
	for _, i := range idx {
		want = max(want, l.ExampleLen(Train, i))
	}
	if b.B != 3 || b.T != want || len(b.Tokens) != 3*want || len(b.Targets) != 3 {
		t.Fatalf("batch %d×%d, %d tokens, %d targets", b.B, b.T, len(b.Tokens), len(b.Targets))
	}
	for r, i := range idx {
		n := l.ExampleLen(Train, i)
		row := b.Tokens[r*b.T : (r+1)*b.T]
		for j := n; j < b.T; j++ {
			if row[j] != ListOpsPad {
				t.Fatalf("row %d: position %d not padded", r, j)
			}
		}
		if v, err := ListOpsEval(row[:n]); err != nil || int32(v) != b.Targets[r] {
			t.Fatalf("row %d: %v, label %d vs %d", r, err, b.Targets[r], v)
		}
	}
	Fill(&b, l, Train, idx, 80)
	if b.T != 80 {
		t.Errorf("fixed length: T = %d", b.T)
	}

	// LM batches pad targets with −1.
	r, _ := NewRecall(RecallConfig{Len: 16, Pairs: 3, Train: 5, Val: 1, Test: 1})
	Fill(&b, r, Train, []int{0, 1}, 20)
	if len(b.Targets) != 40 || b.Targets[19] != -1 || b.Targets[15] < 0 || b.NumTargets() != 2 {
		t.Errorf("LM padding: targets %v", b.Targets)
	}
}

func TestLoader(t *testing.T) {
	r, _ := NewRecall(RecallConfig{Len: 8, Pairs: 2, Train: 23, Val: 10, Test: 10})
	// A sequential loader covers the split once, in order.
	l := NewLoader(r, Test, 4, false, 0, 0)
	var b Batch
	var got []int
	for l.Next(&b) {
		got = append(got, b.Index...)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("sequential order %v", got)
	}
	// A shuffling loader: each epoch is a permutation; same seed, same
	// stream; Seek(k) resumes at batch k.
	stream := func(seed uint64, skip, n int) []int {
		l := NewLoader(r, Train, 5, true, seed, 0)
		if skip > 0 {
			l.Seek(skip)
		}
		var out []int
		for range n {
			l.Next(&b)
			out = append(out, b.Index...)
		}
		return out
	}
	a := stream(1, 0, 20) // 100 indices: 4 epochs of 23, and 8 more
	for e := range 4 {
		ep := slices.Clone(a[e*23 : (e+1)*23])
		slices.Sort(ep)
		for i, v := range ep {
			if v != i {
				t.Fatalf("epoch %d is not a permutation: %v", e, ep)
			}
		}
	}
	if slices.Equal(a[:23], a[23:46]) {
		t.Error("two epochs in the same order")
	}
	if !slices.Equal(a, stream(1, 0, 20)) || slices.Equal(a, stream(2, 0, 20)) {
		t.Error("stream not determined by the seed")
	}
	if !slices.Equal(a[35:], stream(1, 7, 13)) {
		t.Error("Seek(7) does not resume at batch 7")
	}
}

func TestLoaderBucket(t *testing.T) {
	l, err := NewListOps(ListOpsConfig{Train: 300, Val: 50, Test: 50, MinLen: 5, MaxLen: 300, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	padded := func(ld *Loader, n int) (pad, seen int, idx []int) {
		var b Batch
		for k := 0; k < n && ld.Next(&b); k++ {
			for _, i := range b.Index {
				pad += b.T - l.ExampleLen(Train, i)
			}
			seen += b.B * b.T
			idx = append(idx, b.Index...)
		}
		return
	}
	p0, n0, _ := padded(NewLoader(l, Train, 10, true, 1, 0), 30)
	p1, n1, idx := padded(NewLoader(l, Train, 10, true, 1, 0).Bucket(10), 30)
	// One epoch is still a permutation, and bucketing cuts the padding.
	s := slices.Clone(idx)
	slices.Sort(s)
	for i, v := range s {
		if v != i {
			t.Fatalf("bucketed epoch is not a permutation")
		}
	}
	if p1*4 > p0 {
		t.Errorf("bucketing: %d of %d tokens are padding, without: %d of %d", p1, n1, p0, n0)
	}
	// Deterministic, and Seek agrees with Next.
	_, _, again := padded(NewLoader(l, Train, 10, true, 1, 0).Bucket(10), 30)
	ld := NewLoader(l, Train, 10, true, 1, 0).Bucket(10)
	ld.Seek(7)
	_, _, tail := padded(ld, 23)
	if !slices.Equal(idx, again) || !slices.Equal(idx[70:], tail) {
		t.Error("bucketed stream not reproducible or Seek disagrees")
	}
	// A sequential bucketed loader visits every example once, by length.
	sq := NewLoader(l, Val, 8, false, 0, 0).Bucket(2)
	var b Batch
	last, count := 0, 0
	for sq.Next(&b) {
		for _, i := range b.Index {
			if n := l.ExampleLen(Val, i); n < last {
				t.Fatal("sequential bucketed loader not in length order")
			} else {
				last = n
			}
			count++
		}
	}
	if count != 50 {
		t.Errorf("sequential bucketed loader visited %d of 50", count)
	}
}
