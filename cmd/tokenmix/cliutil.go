package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
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
