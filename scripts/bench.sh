#!/usr/bin/env bash
# Re-measures every performance figure of BENCHMARKS.md with one command:
# the Go benchmarks (each run -count times and summarized with benchstat),
# the tests' wall-clock assertions (TROUPE_TEST_TIMING=1), and the
# `troupe bench` suite (its table and its JSON report) with the Wasm and
# go-plugin guests it measures, built here.
#
#   scripts/bench.sh [--quick] [--suite] [OUTDIR] [-- TROUPE-BENCH-FLAGS…]
#
# OUTDIR defaults to runs/bench-TIME. --suite builds the guests and runs only
# `troupe bench`; flags after -- go to it (e.g. -- --only step). Environment: COUNT
# (repetitions of each Go benchmark, default 6, 3 with --quick), CC (the C
# compiler of the C guest, default clang). The machine's load average is
# recorded before and after; numbers from a loaded machine are noisy, so
# prefer a quiet one (check `uptime`).
set -uo pipefail
cd "$(dirname "$0")/.."

quick=""
suite=""
while [[ "${1:-}" == --* ]]; do
  case $1 in
  --quick) quick="--quick" ;;
  --suite) suite=1 ;;
  *)
    echo "bench.sh: unknown flag $1 (want --quick, --suite)" >&2
    exit 2
    ;;
  esac
  shift
done
out=runs/bench-$(date +%Y%m%d-%H%M%S)
if [[ $# -gt 0 && "$1" != "--" ]]; then
  out=$1
  shift
fi
[[ "${1:-}" == "--" ]] && shift
extra=("$@")
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
if [[ -z "$suite" ]] && ! command -v benchstat >/dev/null; then
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

if [[ -z "$suite" ]]; then
  # The suite's own workloads (the benchmarks build the guests on first use).
  bench env-step ./cmd/troupe/internal/bench/ '^BenchmarkEnvStep$' -benchtime "$benchtime" -benchmem
  bench policy ./cmd/troupe/internal/bench/ '^Benchmark(Policy|Dot)$' -benchtime "$benchtime" -benchmem
  count=$traincount bench train ./cmd/troupe/internal/bench/ '^BenchmarkTrainIteration$' -cpu 1,2 -benchtime 3x -timeout 60m
  count=$traincount bench llm ./cmd/troupe/internal/bench/ '^BenchmarkLLMInFlight256$' -benchtime 3x
  # The packages' own benchmarks of the same hot paths.
  bench wasm-step ./plugins/wasm/ '^Benchmark(Step(LBF|LBFC|Matrix)|GoGuestCosts)$' -benchtime "$benchtime" -benchmem
  bench grpc-step ./plugins/grpc/ '^BenchmarkStepLBF$' -benchtime "$benchtime" -benchmem
  bench core-policy ./core/policy/ '.' -benchtime "$benchtime" -benchmem
  bench core-grpo ./core/grpo/ '.' -benchtime 3x -benchmem
  bench core-llm ./core/llm/ '^Benchmark(OpenAIInFlight256|ChatSerial)$' -benchtime 3x -benchmem

  # The tests' assertions on wall-clock time, left out of the plain test run.
  timing_pkgs=$(grep -rl --include='*_test.go' 'testenv.Timing()' . | xargs -n1 dirname | sort -u)
  echo "== timing tests: TROUPE_TEST_TIMING=1 go test -count 1 $(echo $timing_pkgs)" | tee -a "$out/commands.txt"
  if ! TROUPE_TEST_TIMING=1 go test -count 1 $timing_pkgs >"$out/timing-tests.txt" 2>&1; then
    echo "bench.sh: timing tests failed (see $out/timing-tests.txt)" >&2
    tail -20 "$out/timing-tests.txt" >&2
    failed+=("timing-tests")
  fi
fi

# The guests of troupe bench's Wasm and go-plugin rows: ENV's Go source
# compiled to Wasm (--wasm), LBF's C port (--wasm-c) and go-plugin binaries
# (--grpc). A guest that does not build is reported and its row skipped.
guests="$out/guests"
mkdir -p "$guests"
plugin_flags=()
guest() { # guest FLAG ENV OUT SOURCE: builds SOURCE (a Go package, or LBF's C port) into $guests/OUT
  local flag=$1 env=$2 file=$guests/$3 src=$4 cmd
  case $flag in
  wasm) cmd=(env GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$file" "$src") ;;
  wasm-c) cmd=("${CC:-clang}" --target=wasm32-wasi -mexec-model=reactor -O2 -I sdk -o "$file" "$src") ;;
  grpc) cmd=(go build -o "$file" "$src") ;;
  esac
  echo "== guest --$flag $env: ${cmd[*]}" | tee -a "$out/commands.txt"
  if "${cmd[@]}" >"$file.log" 2>&1; then
    plugin_flags+=("--$flag" "$env=$file")
  else
    echo "bench.sh: guest --$flag $env did not build (see $file.log)" >&2
    tail -5 "$file.log" >&2
  fi
}
guest wasm lbf lbf.wasm ./examples/wasm-lbf
guest wasm writing writing.wasm ./cmd/troupe/internal/bench/guests/wasmwriting
guest wasm-c lbf lbf-c.wasm examples/c-lbf/lbf.c
guest grpc lbf lbf-plugin ./internal/testplugins/grpc/lbf
guest grpc writing writing-plugin ./cmd/troupe/internal/bench/guests/grpcwriting

# The suite as the CLI runs it: table on stdout, JSON report, progress log.
echo "== troupe bench $quick ${plugin_flags[*]} ${extra[*]} --out $out/troupe-bench.json" | tee -a "$out/commands.txt"
go build -o "$out/troupe" ./cmd/troupe || { echo "bench.sh: cannot build troupe" >&2; exit 1; }
if ! "$out/troupe" bench $quick "${plugin_flags[@]}" "${extra[@]}" --out "$out/troupe-bench.json" 2>"$out/troupe-bench.log" | tee "$out/troupe-bench.txt"; then
  failed+=("troupe-bench")
fi

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" | tee -a "$out/machine.txt"
echo "results in $out"
if ((${#failed[@]})); then
  echo "bench.sh: failed: ${failed[*]}" >&2
  exit 1
fi
