package data

import (
	"fmt"
	"math"
)

// Forward runs a model on batch b and returns its logits: [B,T,V] for a
// language model, [B,C] for a classifier (positions past a row's Lens may
// hold anything). Evaluate reads them before its next call.
type Forward func(b *Batch) ([]float32, error)

// Eval is what Evaluate measures on a split.
type Eval struct {
	// Loss is the mean cross-entropy over the scored targets, in nats:
	// −log softmax(logits)[target], from LogSoftmaxAt.
	Loss float64
	// Accuracy is the fraction of scored targets that are their logits'
	// Argmax.
	Accuracy float64
	// Metric is the task's metric: Accuracy, or bits per byte: the
	// scored targets' cross-entropy summed in bits over their bytes
	// (Loss / ln 2 for byte-level text).
	Metric float64
	// StdErr is Metric's standard error, counting the targets as
	// independent draws: √(p(1−p)/Targets) for accuracy, the per-target
	// cross-entropy's standard deviation over √Targets (in bits) for bits
	// per byte. Neighbouring targets of one example are correlated, so for
	// language models it understates the error.
	StdErr float64
	// Targets is the number of scored targets (bytes, for byte-level
	// text); Bytes, for a bits-per-byte task, the bytes they cover;
	// Examples the number of examples (windows) run.
	Targets, Bytes, Examples int
}

// Evaluate scores split s of task with fwd, the one evaluator of
// tokenmix: `tokenmix train`'s validation, `tokenmix eval` and the arena
// all call it. It runs the first maxBatches batches of batch examples (0 =
// the whole split); bucket > 1 visits a whole split in order of length
// (less padding), while a capped evaluation always takes the first examples
// by index. An error of fwd is returned; a split without targets gives a
// zero Eval.
func Evaluate(fwd Forward, task Task, s Split, batch, maxBatches, bucket int) (Eval, error) {
	info := task.Info()
	var ev Eval
	if task.Len(s) == 0 {
		return ev, nil
	}
	l := NewLoader(task, s, batch, false, 0, 0)
	if maxBatches == 0 {
		l.Bucket(bucket)
	}
	var b Batch
	var nats, sq float64
	var correct int
	for k := 0; (maxBatches == 0 || k < maxBatches) && l.Next(&b); k++ {
		logits, err := fwd(&b)
		if err != nil {
			return Eval{}, err
		}
		if len(logits) < len(b.Targets) || len(logits)%len(b.Targets) != 0 {
			return Eval{}, fmt.Errorf("data: %d logits for %d targets", len(logits), len(b.Targets))
		}
		V := len(logits) / len(b.Targets)
		for i, t := range b.Targets {
			if t < 0 {
				continue
			}
			if int(t) >= V {
				return Eval{}, fmt.Errorf("data: target %d outside the model's %d outputs", t, V)
			}
			row := logits[i*V : (i+1)*V]
			nll := -LogSoftmaxAt(row, int(t))
			nats += nll
			sq += nll * nll
			if Argmax(row) == int(t) {
				correct++
			}
			ev.Targets++
			if info.TokenBytes != nil {
				ev.Bytes += info.TokenBytes[t]
			}
		}
		ev.Examples += b.B
	}
	if ev.Targets == 0 {
		return Eval{Examples: ev.Examples}, nil
	}
	n := float64(ev.Targets)
	ev.Loss = nats / n
	ev.Accuracy = float64(correct) / n
	ev.Metric = ev.Accuracy
	ev.StdErr = math.Sqrt(ev.Accuracy * (1 - ev.Accuracy) / n)
	if info.Metric == BitsPerByte {
		// Per byte: the targets' bits over their bytes (one each at
		// byte level), the standard error scaled alike.
		perByte := 1.0
		if info.TokenBytes == nil {
			ev.Bytes = ev.Targets
		} else if ev.Bytes > 0 {
			perByte = n / float64(ev.Bytes)
		}
		ev.Metric = ev.Loss / math.Ln2 * perByte
		ev.StdErr = math.Sqrt(max(sq/n-ev.Loss*ev.Loss, 0)/n) / math.Ln2 * perByte
	}
	return ev, nil
}
