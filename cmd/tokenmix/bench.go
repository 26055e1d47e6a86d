package main

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// runBench is `tokenmix bench SUB`: it runs one of benchCommands.
func runBench(ctx context.Context, args []string) error {
	cs := benchCommands()
	names := strings.Join(sortedNames(cs), ", ")
	if len(args) == 0 {
		return usageErr("bench: want one of: %s (tokenmix help bench)", names)
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Printf("usage: tokenmix bench %s\n\n%s.\n\nbenchmarks:\n", commands()["bench"].synopsis, upperFirst(commands()["bench"].summary))
		for _, n := range sortedNames(cs) {
			fmt.Fprintf(os.Stdout, "  %-8s %s\n", n, cs[n].summary)
		}
		fmt.Println("\nRun 'tokenmix help bench NAME' for a benchmark's flags.")
		return errHelp
	}
	c, ok := cs[args[0]]
	if !ok {
		return usageErr("bench: unknown benchmark %q (want one of: %s)", args[0], names)
	}
	return c.run(ctx, args[1:])
}
