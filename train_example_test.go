package tokenmix_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tokenmix/tokenmix"
	"github.com/tokenmix/tokenmix/mixer"
	"github.com/tokenmix/tokenmix/mixer/registry"
)

// shopping is a toy task: did someone buy a fruit or a tool?
func shopping() []tokenmix.Example {
	fruit := []string{"apple", "pear", "plum", "fig"}
	tool := []string{"saw", "drill", "hammer", "file"}
	var ex []tokenmix.Example
	for i := range 400 {
		w, label := fruit[(i/2)%4], "fruit"
		if i%2 == 1 {
			w, label = tool[(i/2)%4], "tool"
		}
		ex = append(ex, tokenmix.Example{Text: "today I bought a " + w, Label: label})
	}
	return ex
}

// classify prints the class m gives each text.
func classify(m *tokenmix.Model, texts ...string) {
	var seqs [][]int32
	for _, t := range texts {
		seqs = append(seqs, m.Encode(t))
	}
	preds, err := m.Classify(context.Background(), seqs)
	if err != nil {
		log.Fatal(err)
	}
	for i, p := range preds {
		fmt.Printf("%s: %s\n", texts[i], p.Name)
	}
}

// Train a classifier on examples in memory: the zero config infers a
// classifier of two classes from the labels, and the model's size from
// its defaults.
func ExampleTrain() {
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 100, LR: 3e-3}}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()))
	if err != nil {
		log.Fatal(err)
	}
	m, err := r.Model()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Config().LabelNames)
	classify(m, "today I bought a pear", "today I bought a drill")
	// Output:
	// [fruit tool]
	// today I bought a pear: fruit
	// today I bought a drill: tool
}

// Fine-tune a shipped model on labels of your own: WithInit starts from
// its weights (a new head, as the classes differ), WithFreeze keeps its
// embedding as it is, and the run directory holds the result.
func ExampleTrain_fineTune() {
	dir, err := os.MkdirTemp("", "finetune")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := tokenmix.TrainConfig{Train: tokenmix.TrainSettings{Steps: 300, LR: 1e-2}}
	_, err = tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()),
		tokenmix.WithInit("testdata/spam"), tokenmix.WithFreeze("embed."), tokenmix.WithOutDir(dir))
	if err != nil {
		log.Fatal(err)
	}
	m, err := tokenmix.Load(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Config().DModel, m.Config().LabelNames)
	classify(m, "today I bought a plum", "today I bought a hammer")
	// Output:
	// 16 [fruit tool]
	// today I bought a plum: fruit
	// today I bought a hammer: tool
}

// gain is an outside mixer kind: out_t = g ⊙ x_{t−1}, a learned gain
// [D] on the previous position (causal, so it also serves lms).
type gain[F float32 | float64] struct {
	d     int
	g, dg []F
}

func (m *gain[F]) Params() []mixer.ParamSpec {
	return []mixer.ParamSpec{{Name: "gain", Shape: []int{m.d}, Init: mixer.InitOnes, NoDecay: true}}
}
func (m *gain[F]) Bind(w, g [][]F)             { m.g, m.dg = w[0], g[0] }
func (m *gain[F]) ActSize(b, t int) int        { return 0 }
func (m *gain[F]) ScratchSize(b, t, _ int) int { return 0 }

func (m *gain[F]) Forward(out, act, scratch, x []F, p mixer.Pass) {
	for b := range p.B {
		for t := range p.T {
			o := out[(b*p.T+t)*m.d:][:m.d]
			if t == 0 {
				clear(o)
				continue
			}
			for c, xc := range x[(b*p.T+t-1)*m.d:][:m.d] {
				o[c] = m.g[c] * xc
			}
		}
	}
}

func (m *gain[F]) Backward(dx, scratch, dout, act, x []F, p mixer.Pass) {
	for b := range p.B {
		for t := 1; t < p.T; t++ {
			i := (b*p.T + t - 1) * m.d
			for c, g := range dout[(b*p.T+t)*m.d:][:m.d] {
				dx[i+c] += m.g[c] * g
				m.dg[c] += x[i+c] * g
			}
		}
	}
}

// Train a model whose mixer the program defines: registry.Add makes the
// kind known (its conformance tests run in mixer/registry's suite), and
// the config names it.
func ExampleTrain_outsideMixer() {
	err := registry.Add(mixer.Kind{Name: "gain", Causal: true, Bidirectional: true, Paper: "an example",
		New32: func(c mixer.Config) (mixer.Mixer[float32], error) { return &gain[float32]{d: c.D}, c.Opts.Err() },
		New64: func(c mixer.Config) (mixer.Mixer[float64], error) { return &gain[float64]{d: c.D}, c.Opts.Err() },
		Tests: []mixer.TestCase{{Name: "causal", D: 4, Heads: 1, Causal: true, B: 2, T: 5}}})
	if err != nil {
		log.Fatal(err)
	}
	cfg := tokenmix.TrainConfig{Mixer: mixer.OptionsOf("gain", nil), Train: tokenmix.TrainSettings{Steps: 300, LR: 3e-3}}
	r, err := tokenmix.Train(context.Background(), cfg, tokenmix.Examples(shopping()))
	if err != nil {
		log.Fatal(err)
	}
	m, err := r.Model()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Config().Mixer)
	classify(m, "today I bought a fig", "today I bought a saw")
	// Output:
	// gain
	// today I bought a fig: fruit
	// today I bought a saw: tool
}
