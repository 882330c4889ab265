#!/usr/bin/env bash
# Trains the default writing project at several reward weights and prints, for each, the
# trained policy's evaluation on the 15 held-out RFCs of envs/writing/corpus/HELDOUT.txt
# (sim LLM; teams and rate limits drawn from the agentfile's pools). Used for BENCHMARKS.md.
#   scripts/writing-tradeoff.sh [OUTDIR]
# ITERATIONS (default: the agentfile's) and EPISODES (default 200) override the run length.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/tradeoff}
episodes=${EPISODES:-200}
mkdir -p "$out"
go build -o "$out/troupe" ./cmd/troupe
rfcs=$(grep -v '^#' envs/writing/corpus/HELDOUT.txt | grep . | sed 's/.*/"&"/' | paste -sd, -)
heldout=(--set env.params.corpus_dir=../shared/data/rust-rfcs --set "env.params.rfcs=[$rfcs]")
iters=()
if [ -n "${ITERATIONS:-}" ]; then iters=(--set train.iterations="$ITERATIONS"); fi
printf '%-8s %-8s %12s %12s %9s %9s\n' speed cost consistency speedup tokens reward
for wc in "0 0.1" "0.5 0.1" "2 0.1" "0.5 1"; do
  set -- $wc; w=$1; c=$2
  {
    d="$out/speed-$w-cost-$c"
    "$out/troupe" train --out "$d" --force --no-eval "${iters[@]}" --set reward.weights.speed=$w --set reward.weights.cost=$c >/dev/null 2>"$d.log" || { cat "$d.log"; exit 1; }
    "$out/troupe" eval --policy "$d/policy.safetensors" --episodes "$episodes" "${heldout[@]}" --set 'eval.policies=["grpo","single_agent"]' \
      --set reward.weights.speed=$w --set reward.weights.cost=$c --json >"$d.eval.json" 2>>"$d.log"
    python3 - "$d.eval.json" "$w" "$c" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["policies"]["grpo"]
print(f'{sys.argv[2]:<8} {sys.argv[3]:<8} {r["metrics"]["consistency"]:12.4f} {r["speedup"]:12.2f} {r["tokens"]:9.0f} {r["reward"]:9.4f}')
PY
  }
done
