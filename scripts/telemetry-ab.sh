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

out=${1:-runs/telemetry-ab-$(date -u +%Y%m%dT%H%M%SZ)}
count=${COUNT:-10}
benchtime=${BENCHTIME:-30x}
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
  # The work tree as it is, uncommitted changes included.
  git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C "$tmp/$v"
done
if ! (cd "$tmp/without" && git apply "$patch"); then
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
    # Both runs are named BenchmarkSimEpisode/none, so benchstat pairs them.
    nice -n 10 "$tmp/$v.test" -test.run '^$' -test.bench 'BenchmarkSimEpisode/none$' \
      -test.benchtime "$benchtime" -test.count 1 | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >>"$out/$v.txt"
  done
  echo "telemetry-ab.sh: run $i of $count" >&2
done
echo "load after: $(uptime)" | tee -a "$out/load.txt"
benchstat with="$out/with.txt" without="$out/without.txt" >"$out/benchstat.txt"
cat "$out/benchstat.txt"
