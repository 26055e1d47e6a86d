#!/usr/bin/env bash
# Reversible vs plain blocks: memory against depth (issue 6).
#
#   scripts/bench_reversible.sh [path/to/tokenmix]
#
# Runs `tokenmix bench train` (d=256, 4 heads, d_ff=1024, T=1024, B=4, causal
# lm, full attention, 2 threads) at n_layers 2, 4, 8, 12, with and without
# "reversible": true, and prints planned activation bytes, param bytes, peak
# RSS and activation memory measured as peak RSS − param_bytes.
set -euo pipefail
bin=${1:-tokenmix}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-10s %3s %12s %12s %12s %14s %9s\n' mode L planned_MiB param_MiB peak_MiB rss-param_MiB step_ms
for rev in false true; do
  for L in 2 4 8 12; do
    cat >"$tmp/c.json" <<JSON
{"vocab_size": 256, "d_model": 256, "n_heads": 4, "n_layers": $L, "d_ff": 1024, "max_len": 1024,
 "causal": true, "task": "lm", "reversible": $rev, "mixer": {"kind": "full"}}
JSON
    out=$("$bin" --threads 2 bench train --config "$tmp/c.json" --len 1024 --batch 4 --json)
    python3 -c '
import json, sys
r = json.loads(sys.argv[1]); M = 1 << 20
mode = "reversible" if sys.argv[2] == "true" else "plain"
print("%-10s %3s %12.1f %12.1f %12.1f %14.1f %9.0f" % (mode, sys.argv[3], r["planned_bytes"]/M,
      r["param_bytes"]/M, r["peak_rss_bytes"]/M, (r["peak_rss_bytes"]-r["param_bytes"])/M, r["step_ms"]))
' "$out" "$rev" "$L"
  done
done
