package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tokenmix/tokenmix"
)

// printJSON writes v to stdout as one JSON line.
func printJSON(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

// hiddenFlag removes every occurrence of the boolean flag name from args and
// reports whether there was one.
func hiddenFlag(args []string, name string) ([]string, bool) {
	var out []string
	found := false
	for _, a := range args {
		if a == name {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var xs []int
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || x < 1 {
			return nil, fmt.Errorf("want positive integers, got %q", f)
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// parseBytes parses "512MiB", "4GiB", "1.5GB" or a plain byte count.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	t := strings.TrimSpace(s)
	mul := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mul
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a size such as 512MiB or 4GiB, got %q", s)
	}
	return int64(v * mul), nil
}

// maxMemoryFlag defines --max-memory on fs: a memory budget such as 8GiB,
// 0 for none, by default tokenmix.DefaultMaxMemory. The function it
// returns gives the budget in bytes after parsing, or a usage error.
func maxMemoryFlag(fs *flag.FlagSet, cmd, what string) func() (int64, error) {
	s := fs.String("max-memory", "", what+" (e.g. 8GiB; 0: none; default: nine tenths of the available memory)")
	return func() (int64, error) {
		if *s == "" {
			return tokenmix.DefaultMaxMemory(), nil
		}
		n, err := parseBytes(*s)
		if err != nil {
			return 0, usageErr("%s --max-memory: %v", cmd, err)
		}
		return n, nil
	}
}
