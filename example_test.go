package tokenmix_test

import (
	"context"
	"fmt"
	"log"

	"github.com/tokenmix/tokenmix"
)

func ExampleLoad() {
	// A run directory written by tokenmix train, or a model directory
	// written by tokenmix export, as here.
	m, err := tokenmix.Load("testdata/spam", tokenmix.WithThreads(1))
	if err != nil {
		log.Fatal(err)
	}
	c := m.Config()
	fmt.Println(c.Task, c.Mixer, c.LabelNames)
	// Output: classify full [ham spam]
}

func ExampleModel_Classify() {
	m, err := tokenmix.Load("testdata/spam")
	if err != nil {
		log.Fatal(err)
	}
	texts := []string{"claim your free prize now", "notes for the team meeting"}
	var seqs [][]int32
	for _, t := range texts {
		seqs = append(seqs, m.Encode(t))
	}
	preds, err := m.Classify(context.Background(), seqs)
	if err != nil {
		log.Fatal(err)
	}
	for i, p := range preds {
		fmt.Printf("%s: %s (p > 0.9: %v)\n", texts[i], p.Name, p.Probs[p.Label] > 0.9)
	}
	// Output:
	// claim your free prize now: spam (p > 0.9: true)
	// notes for the team meeting: ham (p > 0.9: true)
}

func ExampleModel_Score() {
	// A causal byte-level lm trained on one sentence.
	m, err := tokenmix.Load("testdata/fox")
	if err != nil {
		log.Fatal(err)
	}
	scores, err := m.Score(context.Background(), [][]int32{
		m.Encode("the quick brown fox jumps over the lazy dog."),
		m.Encode("colourless green ideas sleep furiously."),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range scores {
		fmt.Printf("%d bytes scored, under 1 bit each: %v\n", len(s.LogProbs), s.BitsPerToken < 1)
	}
	// Output:
	// 43 bytes scored, under 1 bit each: true
	// 38 bytes scored, under 1 bit each: false
}
