package bench

import (
	"testing"

	"tokenmix/model"
)

const tinyCfg = `{"vocab_size": 64, "d_model": 16, "n_heads": 2, "n_layers": 2, "d_ff": 32, "max_len": 32,
	"causal": true, "task": "lm", "mixer": {"kind": "full"}}`

func TestMixerAndTrain(t *testing.T) {
	cfg, err := model.ParseConfig([]byte(tinyCfg))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Mixer(cfg, 2, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mixer != "full" || r.Len != 32 || r.Batch != 2 || r.FwdMs <= 0 || r.BwdMs <= 0 || r.PlannedBytes < 4*2*32*16*4 || r.PeakRSSBytes <= 0 {
		t.Errorf("mixer result %+v", r)
	}
	tr, err := Train(cfg, 2, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tr.StepMs <= 0 || tr.TokensPerS <= 0 || tr.PlannedBytes <= 0 || tr.ParamBytes <= 0 {
		t.Errorf("train result %+v", tr)
	}
	if _, err := Mixer(cfg, 1, 64, 1); err == nil {
		t.Error("len beyond max_len: want error")
	}
}

func TestPeakRSS(t *testing.T) {
	before, err := PeakRSS()
	if err != nil {
		t.Skip(err) // no /proc
	}
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	after, _ := PeakRSS()
	if after < before || after < 64<<20 {
		t.Errorf("VmHWM %d before and %d after touching 64 MiB", before, after)
	}
	_ = b[len(b)-1]
}
