#!/usr/bin/env bash
# Re-measures every performance figure of BENCHMARKS.md with one command:
# the Go benchmarks (each run -count times and summarized with benchstat)
# and the `troupe bench` suite (its table and its JSON report).
#
#   scripts/bench.sh [--quick] [OUTDIR]          (default OUTDIR: runs/bench-TIME)
#
# Environment: COUNT (repetitions of each Go benchmark, default 6, 3 with
# --quick). The machine's load average is recorded before and after; numbers
# from a loaded machine are noisy, so prefer a quiet one (check `uptime`).
set -uo pipefail
cd "$(dirname "$0")/.."

quick=""
if [[ "${1:-}" == "--quick" ]]; then
  quick="--quick"
  shift
fi
out=${1:-runs/bench-$(date +%Y%m%d-%H%M%S)}
count=${COUNT:-6}
benchtime=1s
traincount=3
if [[ -n "$quick" ]]; then
  count=${COUNT:-3}
  benchtime=200ms
  traincount=1
fi
mkdir -p "$out"

if ! command -v go >/dev/null; then
  echo "bench.sh: the Go toolchain is needed (go on PATH)" >&2
  exit 2
fi
gobin=$(go env GOPATH)/bin
export PATH="$PATH:$gobin"
if ! command -v benchstat >/dev/null; then
  echo "bench.sh: installing benchstat (golang.org/x/perf/cmd/benchstat)" >&2
  go install golang.org/x/perf/cmd/benchstat@latest || { echo "bench.sh: cannot install benchstat" >&2; exit 1; }
fi

{
  echo "date: $(date -Iseconds)"
  echo "host: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
  echo "go: $(go version)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown) $(git status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} | tee "$out/machine.txt"

failed=()
# bench NAME PKG REGEX [extra go test flags...]: runs one Go benchmark set
# -count times into OUT/NAME.txt and summarizes it with benchstat.
bench() {
  local name=$1 pkg=$2 regex=$3
  shift 3
  echo "== $name: go test -run '^\$' -bench '$regex' -count $count $* $pkg" | tee -a "$out/commands.txt"
  if go test -run '^$' -bench "$regex" -count "$count" "$@" "$pkg" >"$out/$name.txt" 2>"$out/$name.err"; then
    benchstat "$out/$name.txt" | tee "$out/$name.benchstat.txt"
  else
    echo "bench.sh: $name failed (see $out/$name.err)" >&2
    tail -5 "$out/$name.err" >&2
    failed+=("$name")
  fi
}

# The suite's own workloads (plugins are built by the benchmarks on first use).
bench env-step ./internal/bench/ '^BenchmarkEnvStep$' -benchtime "$benchtime" -benchmem
bench policy ./internal/bench/ '^Benchmark(Policy|Dot)$' -benchtime "$benchtime" -benchmem
count=$traincount bench train ./internal/bench/ '^BenchmarkTrainIteration$' -cpu 1,2 -benchtime 3x -timeout 60m
count=$traincount bench llm ./internal/bench/ '^BenchmarkLLMInFlight256$' -benchtime 3x
# The packages' own benchmarks of the same hot paths.
bench wasm-step ./plugins/wasm/ '^Benchmark(Step(LBF|LBFC|Matrix)|GoGuestCosts)$' -benchtime "$benchtime" -benchmem
bench grpc-step ./plugins/grpc/ '^BenchmarkStepLBF$' -benchtime "$benchtime" -benchmem
bench core-policy ./core/policy/ '.' -benchtime "$benchtime" -benchmem
bench core-grpo ./core/grpo/ '.' -benchtime 3x -benchmem
bench core-llm ./core/llm/ '^Benchmark(OpenAIInFlight256|ChatSerial)$' -benchtime 3x -benchmem

# The suite as the CLI runs it: table on stdout, JSON report, progress log.
echo "== troupe bench $quick --out $out/troupe-bench.json" | tee -a "$out/commands.txt"
go build -o "$out/troupe" ./cmd/troupe || { echo "bench.sh: cannot build troupe" >&2; exit 1; }
if ! "$out/troupe" bench $quick --out "$out/troupe-bench.json" 2>"$out/troupe-bench.log" | tee "$out/troupe-bench.txt"; then
  failed+=("troupe-bench")
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" | tee -a "$out/machine.txt"
echo "results in $out"
if ((${#failed[@]})); then
  echo "bench.sh: failed: ${failed[*]}" >&2
  exit 1
fi
