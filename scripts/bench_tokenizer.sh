#!/usr/bin/env bash
# Encoding speed of the tokenizer package against js-tiktoken on the same
# text (Go's net/http sources, non-test .go files), one thread each,
# alternated for ROUNDS rounds; prints each round and the median ratio.
# Needs Node 20 and js-tiktoken:
#   mkdir -p /tmp/tkref && (cd /tmp/tkref && npm install --ignore-scripts js-tiktoken@1.0.21)
#   NODE_PATH=/tmp/tkref/node_modules scripts/bench_tokenizer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
dir="$(go env GOROOT)/src/net/http"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go test -c -o "$bin/tok.test" ./tokenizer
ratios=()
for r in $(seq "$rounds"); do
  go_line=$(cd tokenizer && GOMAXPROCS=1 "$bin/tok.test" -test.run '^$' -test.bench '^BenchmarkEncodeCL100K$' -test.benchtime 5x | grep '^BenchmarkEncodeCL100K')
  go_mbs=$(echo "$go_line" | awk '{for (i = 1; i <= NF; i++) if ($(i+1) == "MB/s") print $i}')
  allocs=$(echo "$go_line" | awk '{for (i = 1; i <= NF; i++) if ($(i+1) == "allocs/MB") print $i}')
  js_mbs=$(node --single-threaded scripts/bench_tokenizer.mjs "$dir" cl100k_base 3 | awk '{print $3}')
  ratio=$(awk -v g="$go_mbs" -v j="$js_mbs" 'BEGIN { printf "%.2f", g / j }')
  ratios+=("$ratio")
  echo "round $r: tokenmix $go_mbs MB/s ($allocs allocs/MB), js-tiktoken $js_mbs MB/s: ${ratio}x"
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print "median ratio (tokenmix / js-tiktoken): " a[int((NR + 1) / 2)] "x"}'
