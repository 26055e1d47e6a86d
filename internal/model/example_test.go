package model_test

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/model"
)

func ExampleParseConfig() {
	_, err := model.ParseConfig([]byte(`{"vocab_size": 256, "d_model": 96, "n_heads": 5, "n_layers": 2,
		"d_ff": 384, "max_len": 128, "task": "lm", "mixer": {"kind": "full"}}`))
	fmt.Println(err)
	_, err = model.ParseConfig([]byte(`{"vocab_size": 256, "d_model": 96, "n_heads": 4, "n_layers": 2,
		"d_ff": 384, "max_len": 128, "task": "lm", "mixer": {"kind": "full", "window": 8}}`))
	fmt.Println(err)
	// Output:
	// n_heads: must divide d_model (96 % 5 ≠ 0)
	// mixer.window: unknown key (kind full; tokenmix mixers lists each kind's options)
}

func ExampleModel() {
	cfg, err := model.ParseConfig([]byte(`{"vocab_size": 256, "d_model": 32, "n_heads": 4, "n_layers": 2,
		"d_ff": 128, "max_len": 64, "causal": true, "task": "lm", "mixer": {"kind": "full"}}`))
	if err != nil {
		panic(err)
	}
	m, err := model.New[float32](cfg)
	if err != nil {
		panic(err)
	}
	m.Init(1)
	B, T := 2, 16
	tokens, targets := make([]int32, B*T), make([]int32, B*T)
	for i := range tokens {
		tokens[i], targets[i] = int32(i%7), int32((i+1)%7)
	}
	loss, err := m.Forward(tokens, targets, B, T)
	if err != nil {
		panic(err)
	}
	m.ZeroGrad()
	m.Backward()
	fmt.Printf("%d parameters in %d tensors; initial loss %.3f (ln 256 = 5.545)\n", m.NumParams(), len(m.Specs), loss)
	// Output:
	// 44160 parameters in 38 tensors; initial loss 5.615 (ln 256 = 5.545)
}
