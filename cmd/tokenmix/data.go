package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/tokenmix/tokenmix/internal/data"
)

// exportTasks are the classification tasks of the task list, the ones
// `tokenmix data export` writes.
var exportTasks = []string{"listops", "fmnist", "pathfinder"}

// runData is `tokenmix data export`: a built-in task's split as JSONL
// lines {"tokens": […], "label": name}, the format tokenmix train reads.
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
	task := fs.String("task", "", "listops, fmnist or pathfinder (the task list's entry, default settings)")
	split := fs.String("split", "test", "train, val or test")
	seqLen := fs.Int("len", 0, "sequence length, set through the task list's length keys (listops max_len with min_len = len/4, pathfinder len = side²); not for fmnist")
	dataDir := fs.String("data-dir", "", "fmnist: directory of the IDX files")
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
	if !slices.Contains(exportTasks, *task) {
		return usageErr("data export: --task: want listops, fmnist or pathfinder (classification tasks), got %q", *task)
	}
	keys := map[string]json.RawMessage{}
	if *dataDir != "" {
		keys["data_dir"], _ = json.Marshal(*dataDir)
	}
	if *seqLen != 0 {
		spec, err := data.LookupTask(*task)
		if err != nil {
			return err
		}
		kv := spec.Len(*seqLen)
		if kv == nil {
			return usageErr("data export: --len: task %s has a fixed length", *task)
		}
		for k, v := range kv {
			keys[k], _ = json.Marshal(v)
		}
	}
	t, err := data.NewTask(*task, keys, "")
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
	tokens, target := make([]int32, info.MaxLen+1), make([]int32, 1)
	type line struct {
		Tokens []int32 `json:"tokens"`
		Label  string  `json:"label"`
	}
	enc := json.NewEncoder(bw)
	for i := range t.Len(s) {
		n := t.ExampleLen(s, i)
		t.Example(tokens[:n], target, s, i)
		name := strconv.Itoa(int(target[0]))
		if int(target[0]) < len(info.LabelNames) {
			name = info.LabelNames[target[0]]
		}
		if err := enc.Encode(line{tokens[:n], name}); err != nil {
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
		fmt.Fprintf(os.Stderr, "wrote %d %s lines of %s to %s\n", t.Len(s), *split, *task, *out)
	}
	return err
}
