#!/usr/bin/env bash
# Measures the scale-out figures of BENCHMARKS.md ("Scale-out"): the
# throughput of writing episodes whose LLM calls go to an
# OpenAI-compatible test server with a fixed 50 ms latency, on 1, 2 and 4
# worker processes through an in-process NATS JetStream server, relative
# to the in-process pool (BenchmarkDistributedRollouts); and the
# per-episode overhead of going through JetStream (BenchmarkJobOverhead).
#
#   scripts/cluster-bench.sh [OUTDIR]
#
# OUTDIR defaults to runs/cluster-bench-TIME. Environment: COUNT
# (repetitions, default 3), BENCHTIME (rounds per sub-benchmark, default
# 1x) and EPISODES (writing episodes per round, default 32; the CI pass
# of the benchmarks uses 8) of BenchmarkDistributedRollouts, OVERTIME
# (rounds of BenchmarkJobOverhead, default 100x). Each repetition runs every sub-benchmark once,
# one after the other, and each ratio is taken within one repetition
# (against the baseline measured in the same run); the median over the
# repetitions is printed. The load average is
# recorded before and after: the worker processes share this machine's
# cores, so a loaded machine lowers the scaling.
set -uo pipefail
cd "$(dirname "$0")/.."

out=${1:-runs/cluster-bench-$(date +%Y%m%d-%H%M%S)}
count=${COUNT:-3}
benchtime=${BENCHTIME:-1x}
episodes=${EPISODES:-32}
overtime=${OVERTIME:-100x}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if ! command -v go >/dev/null; then
  echo "cluster-bench.sh: the Go toolchain is needed (go on PATH)" >&2
  exit 2
fi
{
  echo "date: $(date -Iseconds)"
  echo "host: $(uname -srm), $(nproc) cores"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"
go test -c -o "$out/cluster.test" ./core/cluster/ || { echo "cluster-bench.sh: cannot build the test binary" >&2; exit 1; }
run=("$out/cluster.test" -test.run '^$')
dist=(-test.bench '^BenchmarkDistributedRollouts$' -test.benchtime "$benchtime" -cluster.episodes "$episodes")
over=(-test.bench '^BenchmarkJobOverhead$' -test.benchtime "$overtime")
echo "commands (each run $count times, in core/cluster): ${run[*]} ${dist[*]}; ${run[*]} ${over[*]}" | tee -a "$out/machine.txt"
: >"$out/bench.txt"
for ((k = 1; k <= count; k++)); do
  for args in dist over; do
    declare -n a=$args
    if ! (cd core/cluster && "${run[@]}" "${a[@]}") >>"$out/bench.txt" 2>>"$out/bench.err"; then
      echo "cluster-bench.sh: the benchmarks failed; see $out/bench.txt and $out/bench.err" >&2
      tail -20 "$out/bench.txt" "$out/bench.err" >&2
      exit 1
    fi
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
grep '^Benchmark' "$out/bench.txt"

# Ratios per repetition: the k-th line of each sub-benchmark is the k-th
# repetition. episodes/s is the field before "episodes/s", ms/episode the
# one before "ms/episode".
awk '
function field(name,   i) { for (i = 1; i < NF; i++) if ($(i+1) == name) return $i; return "" }
function median(a, n,   i, j, t) {
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  k = ++seen[name]
  eps[name, k] = field("episodes/s"); ms[name, k] = field("ms/episode")
  if (k > reps) reps = k
}
END {
  printf "\nmedians over %d repetitions (ratios taken within each repetition):\n", reps
  split("1 2 4", ns, " ")
  for (x = 1; x <= 3; x++) {
    n = ns[x]
    for (k = 1; k <= reps; k++) {
      s[k] = eps["DistributedRollouts/procs-" n, k] / eps["DistributedRollouts/inproc-c1", k]
      e[k] = s[k] / n
    }
    printf "  %d worker process(es): %.2fx the in-process pool with 1 worker (%.2f of linear)\n", n, median(s, reps), median(e, reps)
  }
  for (k = 1; k <= reps; k++) s[k] = eps["DistributedRollouts/procs-4", k] / eps["DistributedRollouts/inproc-c4", k]
  printf "  4 worker processes: %.2fx the in-process pool with 4 workers\n", median(s, reps)
  split("16 1", bs, " ")
  for (x = 1; x <= 2; x++) {
    for (k = 1; k <= reps; k++) s[k] = ms["JobOverhead/batch-" bs[x], k] - ms["JobOverhead/inproc", k]
    printf "  JetStream overhead per episode, %d job(s) a round: %.2f ms (target < 5 ms)\n", bs[x], median(s, reps)
  }
}' "$out/bench.txt" | tee "$out/ratios.txt"
