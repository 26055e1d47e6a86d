package data_test

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/data"
)

func ExampleListOpsEval() {
	toks, _ := data.ListOpsParse("[MAX 2 9 [MIN 4 7 ] [MED 1 8 ] [SM 5 6 ] ]")
	v, err := data.ListOpsEval(toks)
	fmt.Println(v, err)
	// Output: 9 <nil>
}

func ExampleNewRecall() {
	r, _ := data.NewRecall(data.RecallConfig{Len: 12, Pairs: 3, Queries: 2, Keys: 4, Values: 4, Seed: 1})
	toks, targets := make([]int32, 12), make([]int32, 12)
	r.Example(toks, targets, data.Train, 0)
	fmt.Println(r.Info().Vocab, len(toks))
	// The two queries close the sequence; only they have targets.
	fmt.Println(targets[:10], targets[10] >= 0, targets[11] >= 0)
	// Output:
	// 10 12
	// [-1 -1 -1 -1 -1 -1 -1 -1 -1 -1] true true
}

func ExamplePathfinderText() {
	p, _ := data.NewPathfinder(data.PathfinderConfig{Len: 576, ContourLen: 6, Distractors: 1, Seed: 2})
	tok, label := make([]int32, 576), make([]int32, 1)
	p.Example(tok, label, data.Test, 1)
	// Label 1: the markers (@) sit on the two ends of one contour.
	fmt.Printf("label %d\n%s", label[0], data.PathfinderText(tok, p.Side()))
	// Output:
	// label 1
	// ........................
	// ........................
	// ........................
	// ........................
	// ........................
	// ........................
	// .......................o
	// ...o...................o
	// ....o...................
	// ......................o.
	// ....o.................o.
	// .....o...@@@............
	// .........@@@............
	// ....o....@@@............
	// ...o....................
	// ..........o.............
	// ...o......o.............
	// ...o....................
	// ...........o............
	// ...o.......o............
	// ...o.........o..........
	// .....o........o....@@@..
	// ......o.........oo.@@@..
	// ...................@@@..
}
