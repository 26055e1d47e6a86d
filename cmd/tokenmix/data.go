package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/data"
)

// runData is `tokenmix data export`: a split of a task of the task list
// as JSONL, the format tokenmix train reads: {"tokens": […], "label": name}
// lines for a classification task, {"tokens": […], "targets": […]} for an
// lm task (a target per position, −1 for none).
func runData(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "export" && args[0] != "-h" && args[0] != "--help" {
		return usageErr("data: want tokenmix data %s (got %q)", commands()["data"].synopsis, args)
	}
	if args[0] != "export" {
		args = args[:1] // -h
	} else {
		args = args[1:]
	}
	fs := newFlags("data")
	task := fs.String("task", "", "a task of the task list: its name (default settings) or its JSON object, e.g. {\"name\": \"recall\", \"layout\": \"pairs_first\", \"len\": 1024}")
	split := fs.String("split", "test", "train, val or test")
	seqLen := fs.Int("len", 0, "sequence length, set through the task list's length keys (recall len, listops max_len with min_len = len/4, pathfinder len = side², gosrc seq_len); not for fmnist")
	dataDir := fs.String("data-dir", "", "fmnist: directory of the IDX files; gosrc: the source tree to read")
	out := fs.String("out", "", "output file (default: stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *task == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	s, ok := map[string]data.Split{"train": data.Train, "val": data.Val, "test": data.Test}[*split]
	if !ok {
		return usageErr("data export: --split: want train, val or test, got %q", *split)
	}
	name, keys, err := splitTaskArg("data export", *task)
	if err != nil {
		return err
	}
	if *dataDir != "" {
		keys["data_dir"], _ = json.Marshal(*dataDir)
	}
	if *seqLen != 0 {
		spec, err := data.LookupTask(name)
		if err != nil {
			return err
		}
		kv := spec.Len(*seqLen)
		if kv == nil {
			return usageErr("data export: --len: task %s has a fixed length", name)
		}
		for k, v := range kv {
			keys[k], _ = json.Marshal(v)
		}
	}
	t, err := data.NewTask(name, keys, "")
	if err != nil {
		return err
	}
	w := os.Stdout
	if *out != "" {
		if w, err = os.Create(*out); err != nil {
			return err
		}
	}
	if w != os.Stdout {
		defer w.Close() // also on an error; the success path closes it below
	}
	bw := bufio.NewWriter(w)
	info := t.Info()
	tokens, target := make([]int32, info.MaxLen+1), make([]int32, info.MaxLen+1)
	type line struct {
		Tokens  []int32 `json:"tokens"`
		Label   string  `json:"label,omitempty"`
		Targets []int32 `json:"targets,omitempty"`
	}
	enc := json.NewEncoder(bw)
	for i := range t.Len(s) {
		n := t.ExampleLen(s, i)
		l := line{Tokens: tokens[:n]}
		if info.Mode == data.LM {
			t.Example(tokens[:n], target[:n], s, i)
			l.Targets = target[:n]
		} else {
			t.Example(tokens[:n], target[:1], s, i)
			l.Label = strconv.Itoa(int(target[0]))
			if int(target[0]) < len(info.LabelNames) {
				l.Label = info.LabelNames[target[0]]
			}
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	err = bw.Flush()
	if w != os.Stdout {
		err = errors.Join(err, w.Close())
	}
	if err != nil && *out != "" {
		os.Remove(*out) // no partial file
	}
	if err == nil && *out != "" {
		fmt.Fprintf(os.Stderr, "wrote %d %s lines of %s to %s\n", t.Len(s), *split, name, *out)
	}
	return err
}
