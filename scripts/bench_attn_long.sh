#!/bin/sh
# The long-context attention figure: one full-attention layer of
# scripts/speed_d256.json (d=256, 4 heads, causal), B=1, T=16384 (or $LEN),
# forward + backward, as a share of the fp32 FMA peak that `tokenmix bench
# peak` measures in the same round. FLOPs are 7·T²·d for the causal core
# (forward 2·T²·d, backward 2.5× the forward) plus 24·T·d² for the four
# projections forward and backward. With several binaries, each round runs
# them one after the other, alternating which goes first, and the summary
# gives each one's median and its ratio to the first binary's.
#
#   scripts/bench_attn_long.sh ROUNDS TOKENMIX [TOKENMIX2 ...]
set -eu
rounds=$1
shift
len=${LEN:-16384}
threads=${THREADS:-2}
cfg=$(dirname "$0")/speed_d256.json
out=$(mktemp)
r=1
while [ "$r" -le "$rounds" ]; do
	order=$(seq 1 $#)
	if [ $((r % 2)) -eq 0 ]; then
		order=$(seq $# -1 1)
	fi
	for i in $order; do
		eval bin=\${$i}
		peak=$("$bin" bench peak --threads-list "$threads" --json | grep '"op":"peak"' | sed 's/.*"gflops":\([0-9.e+-]*\).*/\1/')
		res=$("$bin" --threads "$threads" bench mixer --config "$cfg" --len "$len" --batch 1 --json)
		fwd=$(echo "$res" | sed 's/.*"fwd_ms":\([0-9.e+-]*\).*/\1/')
		bwd=$(echo "$res" | sed 's/.*"bwd_ms":\([0-9.e+-]*\).*/\1/')
		plan=$(echo "$res" | sed 's/.*"planned_bytes":\([0-9]*\).*/\1/')
		rss=$(echo "$res" | sed 's/.*"peak_rss_bytes":\([0-9]*\).*/\1/')
		echo "$r $i $peak $fwd $bwd $plan $rss" | awk -v T="$len" -v bin="$bin" -v out="$out" '{
			d = 256; fl = 7*T*T*d + 24*T*d*d; ms = $4 + $5; g = fl/(ms/1000)/1e9
			printf "round %d  binary %d (%s)  peak %.1f GFLOP/s  fwd %.0f ms  bwd %.0f ms  %.1f GFLOP/s  %.1f%% of peak  planned %.1f MiB  peak RSS %.1f MiB\n", $1, $2, bin, $3, $4, $5, g, 100*g/$3, $6/1048576, $7/1048576
			printf "%d %.4f %.3f\n", $2, 100*g/$3, ms >> out
		}'
	done
	r=$((r + 1))
done
awk '{ n[$1]++; p[$1, n[$1]] = $2; t[$1, n[$1]] = $3 }
function median(arr, b, m,   i, j, x, a) {
	for (i = 1; i <= m; i++) a[i] = arr[b, i]
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
	return (m % 2) ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
}
END {
	t1 = median(t, 1, n[1])
	for (b = 1; b in n; b++)
		printf "binary %d: median %.1f%% of peak, fwd+bwd %.0f ms, %.2fx as fast as binary 1 (medians of %d rounds)\n", b, median(p, b, n[b]), median(t, b, n[b]), t1 / median(t, b, n[b]), n[b]
}' "$out"
rm -f "$out"
