#!/usr/bin/env bash
# A/B of "telemetry off" against the code without the telemetry hooks: the
# CPU time of one writing episode with the simulated LLM
# (BenchmarkSimEpisode/none of core/telemetry: the [telemetry] default,
# exporter "none") built from the work tree as it is (A) and from a copy
# with core/telemetry/testdata/without-hooks.patch applied (B: no episode
# span calls, no LLM wrapping, nothing of telemetry on the episode path).
# The two test binaries run in turn, COUNT times each, so that a change of
# the machine's load falls on both; benchstat compares cpu-ns/episode and
# gives the p-value (Mann-Whitney U).
#
#   scripts/telemetry-ab.sh [OUTDIR]
#   scripts/telemetry-ab.sh --chat REV [OUTDIR]
#
# --chat REV compares instead the cost of one traced LLM call
# (BenchmarkChatOverhead: off, spans made and discarded, OTLP/HTTP to a
# collector stand-in) of the work tree (A) with that of commit REV (B)
# with the work tree's bench_test.go, e.g. --chat 4bfe29f for the hot
# path before it was made cheaper.
#
# OUTDIR defaults to runs/telemetry-ab-TIME and receives with.txt,
# without.txt, benchstat.txt and the load average before and after.
# Environment: COUNT (runs of each binary, default 10), BENCHTIME (episodes
# per run, default 30x). The simulated LLM's figures are labelled as such.
# If the patch no longer applies (the hooks moved), regenerate it: copy the
# tree, delete the hook lines in core/rollout/{episode,pool,run}.go, and
# save `git diff`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

chat=""
if [[ "${1:-}" == --chat ]]; then
  chat=${2:?"telemetry-ab.sh: --chat needs a commit"}
  shift 2
fi
out=${1:-runs/telemetry-ab-$(date -u +%Y%m%dT%H%M%SZ)}
count=${COUNT:-10}
if [[ -n "$chat" ]]; then
  benchtime=${BENCHTIME:-20000x}
  bench='BenchmarkChatOverhead'
else
  benchtime=${BENCHTIME:-30x}
  bench='BenchmarkSimEpisode/none$'
fi
patch=$root/core/telemetry/testdata/without-hooks.patch
mkdir -p "$out"
out=$(cd "$out" && pwd)

export PATH=$PATH:$(go env GOPATH)/bin
if ! command -v benchstat >/dev/null; then
  echo "telemetry-ab.sh: installing benchstat (golang.org/x/perf/cmd/benchstat)" >&2
  go install golang.org/x/perf/cmd/benchstat@latest || { echo "telemetry-ab.sh: cannot install benchstat" >&2; exit 1; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for v in with without; do
  mkdir -p "$tmp/$v"
  if [[ -n "$chat" && $v == without ]]; then
    git archive "$chat" | tar -xf - -C "$tmp/$v"
    cp core/telemetry/bench_test.go "$tmp/$v/core/telemetry/"
    continue
  fi
  # The work tree as it is, uncommitted changes included.
  git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C "$tmp/$v"
done
if [[ -z "$chat" ]] && ! (cd "$tmp/without" && git apply "$patch"); then
  echo "telemetry-ab.sh: $patch no longer applies to this tree; regenerate it (see the head of this script)" >&2
  exit 1
fi
for v in with without; do
  (cd "$tmp/$v" && go test -c -o "$tmp/$v.test" ./core/telemetry)
done

echo "load before: $(uptime)" | tee "$out/load.txt"
: >"$out/with.txt"
: >"$out/without.txt"
for i in $(seq "$count"); do
  for v in with without; do
    # Both binaries' benchmarks have the same names, so benchstat pairs them.
    nice -n 10 "$tmp/$v.test" -test.run '^$' -test.bench "$bench" \
      -test.benchtime "$benchtime" -test.count 1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$out/$v.txt"
  done
  echo "telemetry-ab.sh: run $i of $count" >&2
done
echo "load after: $(uptime)" | tee -a "$out/load.txt"
if [[ -n "$chat" ]]; then
  benchstat worktree="$out/with.txt" "$chat"="$out/without.txt" >"$out/benchstat.txt"
else
  benchstat with-hooks-off="$out/with.txt" without-hooks="$out/without.txt" >"$out/benchstat.txt"
fi
cat "$out/benchstat.txt"
