package train

import (
	"fmt"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/internal/model"
)

// CheckTask checks that mc fits a task of the task list: its task,
// classes, vocabulary, length, causality and padding.
func CheckTask(mc *model.Config, info data.Info) error {
	pad := -1
	if mc.PadID != nil {
		pad = *mc.PadID
	}
	switch {
	case mc.Task != string(info.Mode):
		return fmt.Errorf("the config's task is %q, the task needs %q", mc.Task, info.Mode)
	case info.Mode == data.Classify && mc.NClasses != info.Classes:
		return fmt.Errorf("the config's n_classes is %d, the task has %d classes", mc.NClasses, info.Classes)
	case mc.VocabSize < info.Vocab:
		return fmt.Errorf("the config's vocab_size %d is below the task's %d", mc.VocabSize, info.Vocab)
	case mc.MaxLen < info.MaxLen:
		return fmt.Errorf("the config's max_len %d is below the task's %d", mc.MaxLen, info.MaxLen)
	case info.Causal && !mc.Causal:
		return fmt.Errorf("the task needs a causal model (causal: true)")
	case info.PadID >= 0 && pad != info.PadID:
		return fmt.Errorf("the task pads with token %d; set pad_id %d", info.PadID, info.PadID)
	}
	if pc := PretrainMLM(mc); pc != nil && pc.MaskID < info.Vocab {
		return fmt.Errorf("train.pretrain.mask_id %d is in the task's vocabulary [0, %d); use an id ≥ %d below vocab_size", pc.MaskID, info.Vocab, info.Vocab)
	}
	return nil
}

// PretrainMLM is mc's pretrain object when its objective is mlm, else nil.
func PretrainMLM(mc *model.Config) *model.PretrainConfig {
	if mc.Train == nil || mc.Train.Pretrain == nil || mc.Train.Pretrain.Objective != model.ObjectiveMLM {
		return nil
	}
	return mc.Train.Pretrain
}
