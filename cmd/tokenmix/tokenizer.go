package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tokenmix/tokenmix/internal/data"
	"github.com/tokenmix/tokenmix/tokenizer"
)

// tokenizerCommands is the list of `tokenmix tokenizer` sub-commands.
func tokenizerCommands() map[string]command {
	return map[string]command{
		"train": {"(--data PATH[,PATH] | --task T) --vocab-size N --out tokenizer.json [--pattern P] [--special S,…] [--ext .go] [--max-bytes B] [--seed S]",
			"learn a byte-level BPE tokenizer from text files or directories, or a text task's training split, and write it as a tokenizer.json", runTokenizerTrain, false, false},
		"encode": {"--tokenizer F [--pattern P] [--input FILE] [--special]",
			"read JSONL {\"text\": …} lines and print {\"ids\": […]} per line, in order", runTokenizerEncode, false, false},
		"decode": {"--tokenizer F [--pattern P] [--input FILE]",
			"read JSONL {\"ids\": […]} lines and print {\"text\": …} per line, in order", runTokenizerDecode, false, false},
		"inspect": {"--tokenizer F [--pattern P] [--text PATH[,PATH] [--ext .go] | --task T [--split S]] [--json]",
			"print a tokenizer's vocabulary size, merges, pattern and special tokens, and its compression (bytes per token) on a text", runTokenizerInspect, false, false},
	}
}

func runTokenizer(ctx context.Context, args []string) error {
	return runGroup(ctx, "tokenizer", "sub-command", args)
}

// openTokenizer reads --tokenizer with --pattern.
func openTokenizer(cmd, file, pattern string) (*tokenizer.Tokenizer, error) {
	if file == "" {
		return nil, usageErr("%s: --tokenizer is required", cmd)
	}
	var p tokenizer.Pattern
	if pattern != "" {
		var err error
		if p, err = tokenizer.ParsePattern(pattern); err != nil {
			return nil, usageErr("%s: --pattern: %v", cmd, err)
		}
	}
	return tokenizer.Open(file, p)
}

const patternUsage = "pre-tokenisation pattern: " + tokenizer.PatternNames + " (required for a tiktoken rank file, which carries none)"

func runTokenizerTrain(ctx context.Context, args []string) error {
	fs := newFlags("tokenizer train")
	dataPaths := fs.String("data", "", "comma-separated text files or directories to learn from")
	taskArg := fs.String("task", "", "instead of --data, a text task of the task list (gosrc): its name or JSON object; the tokenizer learns from its training split")
	vocab := fs.Int("vocab-size", 0, "ids in all: 256 bytes, the merged tokens and the special tokens")
	out := fs.String("out", "", "the tokenizer.json to write")
	pattern := fs.String("pattern", "cl100k", patternUsage)
	special := fs.String("special", "", "comma-separated special tokens, given the last ids (e.g. <|endoftext|>)")
	ext := fs.String("ext", "", "read only a directory's files with this suffix (e.g. .go)")
	maxBytes := fs.String("max-bytes", "", "learn from at most this much text (e.g. 64MiB): documents in an order shuffled by --seed")
	seed := fs.Uint64("seed", 1, "seed of the document order for --max-bytes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*dataPaths == "") == (*taskArg == "") || *vocab == 0 || *out == "" || fs.NArg() > 0 {
		return wantUsage(fs)
	}
	p, err := tokenizer.ParsePattern(*pattern)
	if err != nil {
		return usageErr("tokenizer train: --pattern: %v", err)
	}
	opt := tokenizer.TrainOptions{VocabSize: *vocab, Pattern: p, Seed: *seed}
	if *special != "" {
		opt.Special = strings.Split(*special, ",")
	}
	if *maxBytes != "" {
		if opt.MaxBytes, err = parseBytes(*maxBytes); err != nil {
			return usageErr("tokenizer train: --max-bytes: %v", err)
		}
	}
	docs, err := inspectDocs(*dataPaths, *ext, *taskArg, "train")
	if err != nil {
		return err
	}
	tk, err := tokenizer.Train(docs, opt)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(*out, tk.WriteJSON); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "tokenizer train: %d ids (%d merges, %d special) from %d documents → %s\n",
		tk.VocabSize(), tk.NumMerges(), len(tk.Specials()), len(docs), *out)
	return nil
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed into place once complete.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// eachInputLine calls line with each non-blank line of --input (or stdin) and
// its 1-based number.
func eachInputLine(input string, line func(n int, b []byte) error) error {
	r := io.Reader(os.Stdin)
	if input != "" {
		f, err := os.Open(input)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if err := line(n, sc.Bytes()); err != nil {
			return err
		}
	}
	return sc.Err()
}

func runTokenizerEncode(ctx context.Context, args []string) error {
	var special *bool
	return tokenizerLines("tokenizer encode", args, func(fs *flag.FlagSet) {
		special = fs.Bool("special", false, "encode special tokens' contents in the text as those tokens (default: as ordinary text)")
	}, func(tk *tokenizer.Tokenizer, n int, b []byte) (any, error) {
		var in struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(b, &in); err != nil || in.Text == nil {
			return nil, fmt.Errorf("line %d: want {\"text\": \"…\"}", n)
		}
		ids := tk.Encode(*in.Text)
		if *special {
			ids = tk.EncodeSpecial(*in.Text)
		}
		if ids == nil {
			ids = []int{}
		}
		return struct {
			IDs []int `json:"ids"`
		}{ids}, nil
	})
}

func runTokenizerDecode(ctx context.Context, args []string) error {
	return tokenizerLines("tokenizer decode", args, nil, func(tk *tokenizer.Tokenizer, n int, b []byte) (any, error) {
		var in struct {
			IDs *[]int `json:"ids"`
		}
		if err := json.Unmarshal(b, &in); err != nil || in.IDs == nil {
			return nil, fmt.Errorf("line %d: want {\"ids\": [...]} of integers", n)
		}
		text, err := tk.Decode(*in.IDs)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		return struct {
			Text string `json:"text"`
		}{text}, nil
	})
}

// tokenizerLines runs a JSONL filter (encode, decode): its flags
// (--tokenizer, --pattern, --input and those flags adds), then line's
// answer for each input line, one JSON object a line on stdout.
func tokenizerLines(cmd string, args []string, flags func(*flag.FlagSet), line func(tk *tokenizer.Tokenizer, n int, b []byte) (any, error)) error {
	fs := newFlags(cmd)
	file := fs.String("tokenizer", "", "a tokenizer.json, or a tiktoken rank file with --pattern")
	pattern := fs.String("pattern", "", patternUsage)
	input := fs.String("input", "", "JSONL input (default: stdin)")
	if flags != nil {
		flags(fs)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	tk, err := openTokenizer(cmd, *file, *pattern)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	err = eachInputLine(*input, func(n int, b []byte) error {
		v, err := line(tk, n, b)
		if err != nil {
			return err
		}
		return enc.Encode(v)
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

func runTokenizerInspect(ctx context.Context, args []string) error {
	fs := newFlags("tokenizer inspect")
	file := fs.String("tokenizer", "", "a tokenizer.json, or a tiktoken rank file with --pattern")
	pattern := fs.String("pattern", "", patternUsage)
	text := fs.String("text", "", "comma-separated text files or directories to measure the compression on")
	ext := fs.String("ext", "", "read only a directory's files with this suffix (e.g. .go)")
	taskArg := fs.String("task", "", "instead of --text, a text task of the task list (gosrc): its name or JSON object")
	split := fs.String("split", "test", "the split of --task: train, val or test")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return wantUsage(fs)
	}
	tk, err := openTokenizer("tokenizer inspect", *file, *pattern)
	if err != nil {
		return err
	}
	type report struct {
		VocabSize     int                 `json:"vocab_size"`
		Merges        int                 `json:"merges"`
		Pattern       string              `json:"pattern"`
		Regex         string              `json:"regex"`
		Special       []tokenizer.Special `json:"special"`
		Bytes         int64               `json:"text_bytes,omitempty"`
		Tokens        int64               `json:"text_tokens,omitempty"`
		BytesPerToken float64             `json:"bytes_per_token,omitempty"`
	}
	r := report{VocabSize: tk.VocabSize(), Merges: tk.NumMerges(), Pattern: tk.Pattern().String(),
		Regex: tk.Pattern().Regex(), Special: tk.Specials()}
	if *text != "" && *taskArg != "" {
		return usageErr("tokenizer inspect: --text or --task, not both")
	}
	if *text != "" || *taskArg != "" {
		docs, err := inspectDocs(*text, *ext, *taskArg, *split)
		if err != nil {
			return err
		}
		var ids []int
		for _, d := range docs {
			ids = tk.AppendEncode(ids[:0], d)
			r.Bytes += int64(len(d))
			r.Tokens += int64(len(ids))
		}
		if r.Tokens > 0 {
			r.BytesPerToken = float64(r.Bytes) / float64(r.Tokens)
		}
	}
	if *asJSON {
		return printJSON(r)
	}
	fmt.Printf("vocab size  %d\nmerges      %d\npattern     %s  %s\n", r.VocabSize, r.Merges, r.Pattern, r.Regex)
	for _, s := range r.Special {
		fmt.Printf("special     %d  %q\n", s.ID, s.Content)
	}
	if r.Tokens > 0 {
		fmt.Printf("text        %d bytes → %d tokens: %.3f bytes per token\n", r.Bytes, r.Tokens, r.BytesPerToken)
	}
	return nil
}

// inspectDocs reads the documents of --data or --text (paths, filtered by
// ext), or of split of the text task taskArg.
func inspectDocs(paths, ext, taskArg, split string) ([]string, error) {
	if taskArg == "" {
		return tokenizer.ReadDocs(strings.Split(paths, ","), ext)
	}
	s, ok := map[string]data.Split{"train": data.Train, "val": data.Val, "test": data.Test}[split]
	if !ok {
		return nil, usageErr("tokenizer: --split: want train, val or test, got %q", split)
	}
	name, keys, err := splitTaskArg("tokenizer", taskArg)
	if err != nil {
		return nil, err
	}
	t, err := data.NewTask(name, keys, "")
	if err != nil {
		return nil, err
	}
	text, ok := t.(interface{ Bytes(data.Split) []byte })
	if !ok {
		return nil, usageErr("tokenizer: --task %s is not a text task (gosrc is)", name)
	}
	return []string{string(text.Bytes(s))}, nil
}
