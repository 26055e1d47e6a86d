package train

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
	"github.com/tokenmix/tokenmix/mixer"
)

// Self-pretraining (train.pretrain; Amos, Berant and Gupta 2024, "Never
// Train from Scratch") is a first stage of Run: the model, with the
// token-level head pretrain_head instead of the task's, trains on the
// training split's token sequences, labels unused, with one of two
// objectives (docs/model.md, "Self-pretraining"):
//
//	lm:  targets[b,t] = tokens[b,t+1]; −1 at t = T−1 and where tokens[b,t+1] or tokens[b,t] is pad_id
//	mlm: each non-pad position j of the [B,T] batch (row-major) is masked
//	     ⇔ 16-bit lane j mod 4 of splitmix(key + ⌊j/4⌋) < round(mask_rate·2¹⁶),
//	     key = splitmix(splitmix(splitmix(seed) + step) XOR 2⁶²);
//	     if that masks none, the non-pad position number splitmix(key) mod n
//	     (of the n in order) is masked. A masked token becomes mask_id and
//	     is its position's target; every other target is −1.
//
// step is the run's update index (0-based) and seed train.seed, so the
// masks of a resumed run are those of an uninterrupted one.

// maskStream marks the mlm mask stream (dropout's set bit 63, LSH's never
// reach bit 62).
const maskStream = 1 << 62

// MaskKey is the key of the mlm mask of the update with index step.
func MaskKey(seed uint64, step int) uint64 {
	return mixer.SplitMix(mixer.SplitMix(mixer.SplitMix(seed)+uint64(step)) ^ maskStream)
}

// pretrainBatch turns task batches into pretraining batches.
type pretrainBatch struct {
	pc              *model.PretrainConfig
	pad             int // pad_id, or −1
	seed            uint64
	tokens, targets []int32
}

func newPretrainBatch(c *model.Config) *pretrainBatch {
	p := &pretrainBatch{pc: c.Train.Pretrain, pad: -1, seed: c.Train.Seed}
	if c.PadID != nil {
		p.pad = *c.PadID
	}
	return p
}

// make returns the tokens and targets [B,T] of update step's pretraining
// batch from the task batch b (its labels unused). The slices are p's own,
// valid until the next call.
func (p *pretrainBatch) make(b *data.Batch, step int) (tokens, targets []int32) {
	n := b.B * b.T
	if cap(p.tokens) < n {
		p.tokens, p.targets = make([]int32, n), make([]int32, n)
	}
	tokens, targets = p.tokens[:n], p.targets[:n]
	copy(tokens, b.Tokens[:n])
	if p.pc.Objective == model.ObjectiveLM {
		NextTokenTargets(targets, tokens, b.B, b.T, p.pad)
	} else {
		MaskTokens(tokens, targets, b.B*b.T, p.pc.MaskRate, int32(p.pc.MaskID), p.pad, MaskKey(p.seed, step))
	}
	return tokens, targets
}

// NextTokenTargets sets the lm pretraining targets of tokens [B,T]:
// targets[b,t] = tokens[b,t+1], and −1 at the last position and wherever
// tokens[b,t] or tokens[b,t+1] is pad (pad < 0: none).
func NextTokenTargets(targets, tokens []int32, B, T, pad int) {
	for b := range B {
		row, tgt := tokens[b*T:(b+1)*T], targets[b*T:(b+1)*T]
		for t := range T {
			tgt[t] = -1
			if t+1 < T && int(row[t]) != pad && int(row[t+1]) != pad {
				tgt[t] = row[t+1]
			}
		}
	}
}

// MaskTokens applies the mlm mask of key to the n tokens in place
// (masked ones become maskID) and sets targets: the original token at a
// masked position, −1 elsewhere. Positions holding pad (pad < 0: none) are
// never masked; at least one other is, when there is one.
func MaskTokens(tokens, targets []int32, n int, rate float64, maskID int32, pad int, key uint64) {
	thresh := uint64(math.Round(rate * (1 << 16)))
	masked, eligible := 0, 0
	for w := 0; 4*w < n; w++ {
		r := mixer.SplitMix(key + uint64(w))
		for j := 4 * w; j < min(4*w+4, n); j++ {
			targets[j] = -1
			if int(tokens[j]) != pad {
				eligible++
				if r&0xffff < thresh {
					targets[j], tokens[j] = tokens[j], maskID
					masked++
				}
			}
			r >>= 16
		}
	}
	if masked > 0 || eligible == 0 {
		return
	}
	k := mixer.SplitMix(key) % uint64(eligible)
	for j := range n {
		if int(tokens[j]) == pad {
			continue
		}
		if k == 0 {
			targets[j], tokens[j] = tokens[j], maskID
			return
		}
		k--
	}
}
