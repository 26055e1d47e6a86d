// Package bench owns every speed and memory measurement of tokenmix: the
// protocols behind each `tokenmix bench` sub-command, the mixer layer that
// `go test -bench` times in the mixer packages, CPU detection, and (in
// its leaf package stat, which the packages bench imports can use too) the
// one Median and the process's CPU time.
//
// The protocols, and how each measures:
//
//   - GEMM (Gemm, GemmCPU, GemmBF16; GemmReport for `bench gemm`): the
//     GFLOP/s of one product on each of GemmShapes (2·m·n·k flops). One
//     warm-up sample calibrates how many calls make a sample of at least
//     SampleTime, so short products are not dominated by timer
//     resolution; the figure is the median of reps such samples. GemmCPU
//     times one locked OS thread by its own CPU time, which a busy machine
//     disturbs less. The bf16 report measures each shape's bf16 product
//     and then, in the same run, its float32 one, so both see the same
//     machine.
//   - Peak (Peak, PeakCPU, PeakBF16; PeakReport for `bench peak`): a loop
//     of independent vector FMAs (2·L flops per FMA of L float32 lanes) on
//     every thread at once, one warm-up run, then the median of reps runs.
//   - Mixer (Mixer for `bench mixer`, MixerBenchmark for `go test -bench`):
//     forward and backward of one mixer layer (Layer: GPT-2-initialised
//     weights, N(0,1) inputs, fixed seeds). Mixer alternates forward and
//     backward for MixerWarmup, then takes the median of reps samples of
//     each, as the GEMM does. The CLI runs it in a fresh child process
//     (InChild) so that PeakRSS is the layer's own.
//   - Train (`bench train`): full training steps of a model on random
//     tokens; one warm-up step, then the median of reps steps.
//   - Decode (`bench decode`): one stream per position (256, 1024, 4096),
//     stepped one token at a time in turn, reps rounds, so that every
//     position is timed under the same load; the median per position.
//     StepStreams over n streams alternates, step by step, with one stream
//     alone, and the medians give the speed-up.
//   - Serve (`bench serve`): an in-process server on a loopback port and
//     concurrent HTTP clients in the same process, each sending its next
//     request when the last is answered, for a fixed duration per client
//     count; throughput, and the median and 99th-percentile latency.
//     The idle server's cost is stat.ProcessCPU over a wait.
//   - Soak (`bench serve --soak`): `tokenmix serve` in a child process
//     under mixed traffic (every endpoint its models serve, streamed and
//     not, clients that leave mid-stream or mid-request, slow readers,
//     malformed requests) for a fixed time; the child's RSS, heap,
//     goroutines and open fds sampled from its /metrics. It passes when
//     RSS at the end is within 10% of RSS after the warm-up, goroutines
//     and fds come back to their idle counts, and no 5xx but a cancelled
//     request's 503 appears.
//   - Scaling (Scaling, ScalingSweep for `bench scaling`): Mixer for every
//     kind at doubling lengths, each point in its own child process
//     (MixerInChild), until full attention exceeds a memory budget or a
//     kind exceeds a time limit.
//
// Every median is stat.Median: of an odd count the middle value, of an even
// count the upper of the two middle ones. Tests of the protocols check
// what they report, never how fast it is.
package bench
