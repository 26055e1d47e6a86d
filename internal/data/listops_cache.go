package data

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"os"
)

// listOpsFile is the on-disk form of a generated ListOps dataset.
type listOpsFile struct {
	Cfg    ListOpsConfig
	Toks   []uint8
	Off    [3][]int
	Labels [3][]int8
}

// SaveListOps writes l to path (gob), so another process can load it with
// LoadListOps instead of generating it again.
func SaveListOps(path string, l *ListOps) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := gob.NewEncoder(w).Encode(listOpsFile{l.cfg, l.toks, l.off, l.labels}); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LoadListOps reads a dataset written by SaveListOps and checks that it was
// generated from config c (defaults filled in as NewListOps does).
func LoadListOps(path string, c ListOpsConfig) (*ListOps, error) {
	c.defaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var d listOpsFile
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(&d); err != nil {
		return nil, fmt.Errorf("listops cache %s: %v", path, err)
	}
	if d.Cfg != c {
		return nil, fmt.Errorf("listops cache %s: made for %+v, not %+v", path, d.Cfg, c)
	}
	for s := range 3 {
		if len(d.Off[s]) != len(d.Labels[s])+1 || d.Off[s][len(d.Off[s])-1] > len(d.Toks) {
			return nil, fmt.Errorf("listops cache %s: inconsistent %s split", path, Split(s))
		}
	}
	return &ListOps{cfg: d.Cfg, toks: d.Toks, off: d.Off, labels: d.Labels}, nil
}
