package train

import (
	"math"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// Evaluate returns the mean cross-entropy (nats per target) and the task
// metric over the first maxBatches batches of split s (0 = all of it).
// bucket > 1 visits a whole split in order of length (less padding); a
// capped evaluation always takes the first examples by index. A batch the
// model refuses is an error.
func Evaluate(m *model.Model[float32], task data.Task, s data.Split, batch, maxBatches, bucket int) (loss, metric float64, err error) {
	info := task.Info()
	l := data.NewLoader(task, s, batch, false, 0, 0)
	if maxBatches == 0 {
		l.Bucket(bucket)
	}
	var b data.Batch
	var sum float64
	var n, correct int
	for k := 0; (maxBatches == 0 || k < maxBatches) && l.Next(&b); k++ {
		ls, err := m.Forward(b.Tokens, b.Targets, b.B, b.T)
		if err != nil {
			return 0, 0, err
		}
		nt := b.NumTargets()
		sum += ls * float64(nt)
		n += nt
		logits := m.Logits()
		V := len(logits) / len(b.Targets)
		for i, t := range b.Targets {
			if t >= 0 && argmax(logits[i*V:(i+1)*V]) == int(t) {
				correct++
			}
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	loss = sum / float64(n)
	if info.Metric == data.BitsPerByte {
		return loss, loss / math.Ln2, nil
	}
	return loss, float64(correct) / float64(n), nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
