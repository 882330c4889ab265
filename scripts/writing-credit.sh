#!/usr/bin/env bash
# Measures episodes-to-target on the writing task (root agentfile.toml,
# simulated LLM) for several [train] credits over several seeds: the table of
# BENCHMARKS.md "Per-decision credit on the writing task (issue #14)".
#
#   scripts/writing-credit.sh [OUTDIR] [--set key=value]...   (default OUTDIR: runs/writing-credit-TIME)
#
# Environment: CREDITS (default "joint value"), SEEDS (default "1 2 3 4 5"),
# STAGES (the iterations at which the greedy policy is evaluated, default
# "2 5 10 15 20 30 40 50 60"), EVAL_EPISODES (default 100), HELDOUT_EPISODES
# (default 200; 0 skips the held-out evaluation), TROUPE (a troupe binary;
# default: built from this tree into OUTDIR). Extra --set flags go to every
# training run.
#
# Each run trains in stages (`troupe train --out D --no-eval`, then `troupe
# train --resume D --accept-changes --set train.iterations=N`; resuming
# continues bit for bit, so the stages change nothing) and after every stage
# evaluates the greedy policy and read_once_longest on the same EVAL_EPISODES
# evaluation seeds of the shipped corpus (`troupe eval --json`). The last
# stage's policy is also evaluated on the 15 held-out RFCs of
# envs/writing/corpus/HELDOUT.txt (HELDOUT_EPISODES episodes, against
# read_once_longest and read_once_ready). One line per evaluation lands in
# OUTDIR/results.tsv:
#
#   credit seed iteration episodes env_steps grpo grpo_lo grpo_hi diff diff_lo diff_hi
#
# (episodes and env steps cumulative from metrics.jsonl, branch episodes
# included; diff = grpo − read_once_longest on the same seeds with its 95 %
# bootstrap interval), and one per run to OUTDIR/heldout.tsv:
#
#   credit seed grpo grpo_lo grpo_hi diff_longest lo hi diff_ready lo hi
#
# scripts/writing-credit.py OUTDIR TARGET summarises them.
set -euo pipefail
cd "$(dirname "$0")/.."

out=runs/writing-credit-$(date +%Y%m%d-%H%M%S)
if [[ $# -gt 0 && "$1" != --* ]]; then
  out=$1
  shift
fi
extra=("$@")
credits=${CREDITS:-"joint value"}
seeds=${SEEDS:-"1 2 3 4 5"}
stages=${STAGES:-"2 5 10 15 20 30 40 50 60"}
eval_episodes=${EVAL_EPISODES:-100}
heldout_episodes=${HELDOUT_EPISODES:-200}
mkdir -p "$out"
command -v jq >/dev/null || { echo "writing-credit.sh: needs jq" >&2; exit 2; }
troupe=${TROUPE:-}
if [[ -z "$troupe" ]]; then
  troupe=$out/troupe
  go build -o "$troupe" ./cmd/troupe
fi
rfcs=$(grep -v '^#' envs/writing/corpus/HELDOUT.txt | grep . | sed 's/.*/"&"/' | paste -sd, -)
rfc_dir=$(cd ../shared/data/rust-rfcs && pwd) # corpus_dir is read from the working directory

for seed in $seeds; do # seed outermost: a run cut short leaves paired seeds
  for credit in $credits; do
    dir=$out/$credit-s$seed
    prev=0
    for it in $stages; do
      if [[ $prev -eq 0 ]]; then
        nice -n 10 "$troupe" train --out "$dir" --no-eval --set project.seed="$seed" \
          --set train.credit="$credit" --set train.iterations="$it" ${extra[@]+"${extra[@]}"} >"$dir.log" 2>&1
      else
        nice -n 10 "$troupe" train --resume "$dir" --accept-changes --no-eval \
          --set train.iterations="$it" >>"$dir.log" 2>&1
      fi
      prev=$it
      cp "$dir/policy.safetensors" "$dir/snap-$it.safetensors"
      nice -n 10 "$troupe" eval -f "$dir/config.toml" --policy "$dir/snap-$it.safetensors" \
        --episodes "$eval_episodes" --json --set 'eval.policies=["grpo","read_once_longest"]' \
        >"$dir/eval-$it.json" 2>>"$dir.log"
      # metrics.jsonl: episodes per iteration (summed here), env_steps cumulative
      eps=$(jq -s 'map(.episodes) | add' "$dir/metrics.jsonl")
      steps=$(tail -n 1 "$dir/metrics.jsonl" | jq -r .env_steps)
      row=$(jq -r '[.policies.grpo.reward, .policies.grpo.ci95.reward.lo, .policies.grpo.ci95.reward.hi,
        .paired.read_once_longest.reward.mean, .paired.read_once_longest.reward.ci95.lo,
        .paired.read_once_longest.reward.ci95.hi] | @tsv' "$dir/eval-$it.json")
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$credit" "$seed" "$it" "$eps" "$steps" "$row" | tee -a "$out/results.tsv"
    done
    if [[ $heldout_episodes -gt 0 ]]; then
      nice -n 10 "$troupe" eval -f "$dir/config.toml" --policy "$dir/policy.safetensors" \
        --episodes "$heldout_episodes" --json \
        --set 'eval.policies=["grpo","read_once_longest","read_once_ready"]' \
        --set env.params.corpus_dir="$rfc_dir" --set "env.params.rfcs=[$rfcs]" \
        >"$dir/heldout.json" 2>>"$dir.log"
      row=$(jq -r '[.policies.grpo.reward, .policies.grpo.ci95.reward.lo, .policies.grpo.ci95.reward.hi,
        .paired.read_once_longest.reward.mean, .paired.read_once_longest.reward.ci95.lo, .paired.read_once_longest.reward.ci95.hi,
        .paired.read_once_ready.reward.mean, .paired.read_once_ready.reward.ci95.lo, .paired.read_once_ready.reward.ci95.hi] | @tsv' "$dir/heldout.json")
      printf '%s\t%s\t%s\n' "$credit" "$seed" "$row" | tee -a "$out/heldout.tsv"
    fi
  done
done
