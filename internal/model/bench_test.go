package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchTrain times float32 training steps of a causal lm with full
// attention (d_model d, 4 heads, 4 layers, d_ff 4d, vocab 256).
func benchTrain(b *testing.B, d, T, B int, extra string) {
	benchStep(b, fmt.Sprintf(`{"vocab_size": 256, "d_model": %d, "n_heads": 4, "n_layers": 4,
		"d_ff": %d, "max_len": %d, "causal": true, "task": "lm", "mixer": {"kind": "full"}, "train": {}%s}`, d, 4*d, T, extra), T, B, T)
}

// benchModel returns the float32 model of configJSON, initialised with
// seed 1.
func benchModel(b *testing.B, configJSON string) *Model[float32] {
	cfg, err := ParseConfig([]byte(configJSON))
	if err != nil {
		b.Fatal(err)
	}
	m, err := New[float32](cfg)
	if err != nil {
		b.Fatal(err)
	}
	m.Init(1)
	return m
}

// benchStep times float32 training steps of the model configJSON on B
// random sequences of T tokens (vocab 256) with nt random targets each
// (T for lm, 1 for classify), drawn below the head width, after one
// untimed step (the workspace's allocation, so that B/op is a step's own).
func benchStep(b *testing.B, configJSON string, T, B, nt int) {
	m := benchModel(b, configJSON)
	cfg := m.Config
	tr := NewTrainer(m)
	rng := rand.New(rand.NewPCG(1, 1))
	tok, tgt := make([]int32, B*T), make([]int32, B*nt)
	for i := range tok {
		tok[i] = int32(rng.IntN(256))
	}
	for i := range tgt {
		tgt[i] = int32(rng.IntN(cfg.HeadOut()))
	}
	if _, err := tr.Step(tok, tgt, B, T); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(B * T)) // "MB/s" reads as millions of tokens per second
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Step(tok, tgt, B, T); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrainStepD64T256B4(b *testing.B)   { benchTrain(b, 64, 256, 4, "") }
func BenchmarkTrainStepD256T1024B4(b *testing.B) { benchTrain(b, 256, 1024, 4, "") }
func BenchmarkTrainStepD256T1024B4BF16(b *testing.B) {
	benchTrain(b, 256, 1024, 4, `, "precision": "bf16"`)
}
func BenchmarkTrainStepD256T1024B4Ckpt(b *testing.B) {
	benchTrain(b, 256, 1024, 4, `, "checkpoint": true`)
}
func BenchmarkTrainStepD256T1024B4Chunk(b *testing.B) {
	benchTrain(b, 256, 1024, 4, `, "ff_chunks": 4`)
}

// BenchmarkTrainStepFmnistFNet times a training step of the fmnist arena
// preset's FNet model: classify, d_model 64, 2 layers, d_ff 128, T = 784
// (= 16·49, so the time FFT has radix-7 passes), batch 16.
func BenchmarkTrainStepFmnistFNet(b *testing.B) {
	benchStep(b, `{"vocab_size": 256, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128,
		"max_len": 784, "causal": false, "task": "classify", "n_classes": 10, "mixer": {"kind": "fnet"}, "train": {}}`, 784, 16, 1)
}

// BenchmarkTrainStepFmnistFull times a training step of the fmnist arena
// preset's full-attention model: four heads of width 16 at T = 784, batch
// 16, the narrow-head case of attention's products.
func BenchmarkTrainStepFmnistFull(b *testing.B) {
	benchStep(b, `{"vocab_size": 256, "d_model": 64, "n_heads": 4, "n_layers": 2, "d_ff": 128,
		"max_len": 784, "causal": false, "task": "classify", "n_classes": 10, "mixer": {"kind": "full"}, "train": {}}`, 784, 16, 1)
}

// benchDecode times decoding steps of the decode benchmark model
// (scripts/decode_aft_simple_d256.json with mixer kind) for n sequences
// stepped together (DecodeBatch; Decode for n = 1), from position 256.
// The sequences start again from their prompts when they fill max_len.
func benchDecode(b *testing.B, kind string, n int) {
	m := benchModel(b, `{"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": 4, "d_ff": 1024,
		"max_len": 8192, "causal": true, "task": "lm", "mixer": {"kind": "`+kind+`"}}`)
	cfg := m.Config
	var err error
	ds := make([]*Decoding[float32], n)
	prompt := make([]int32, 256)
	for i := range prompt {
		prompt[i] = int32(i)
	}
	start := func() {
		for i := range ds {
			if ds[i], err = m.NewDecoding(cfg.MaxLen); err != nil {
				b.Fatal(err)
			}
			if err := m.Decode(ds[i], prompt, make([]float32, len(prompt)*cfg.VocabSize)); err != nil {
				b.Fatal(err)
			}
		}
	}
	start()
	next, logits := make([]int32, n), make([]float32, n*cfg.VocabSize)
	b.SetBytes(int64(n)) // "MB/s" reads as millions of tokens per second
	b.ResetTimer()
	for range b.N {
		if ds[0].Len() == cfg.MaxLen {
			b.StopTimer()
			start()
			b.StartTimer()
		}
		if n == 1 {
			err = m.Decode(ds[0], next, logits)
		} else {
			err = m.DecodeBatch(ds, next, logits)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAFTSimple1(b *testing.B)  { benchDecode(b, "aft_simple", 1) }
func BenchmarkDecodeAFTSimple16(b *testing.B) { benchDecode(b, "aft_simple", 16) }
func BenchmarkDecodeFull1(b *testing.B)       { benchDecode(b, "full", 1) }
func BenchmarkDecodeFull16(b *testing.B)      { benchDecode(b, "full", 16) }
