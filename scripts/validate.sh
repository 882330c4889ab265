#!/usr/bin/env bash
# Re-runs the validation table of BENCHMARKS.md ("Validation on published
# MARL tasks") with one command: GRPO on Climbing, Penalty (k = -100) and
# Level-Based Foraging 8x8-2p-2f-coop, each with the project in
# examples/TASK/agentfile.toml, over 5 seeds.
#
#   scripts/validate.sh [OUTDIR] [--set key=value]...   (default OUTDIR: runs/validate-TIME)
#
# Environment: SEEDS (default "1 2 3 4 5"), TASKS (default "climbing penalty
# lbf"; also lbf-10x10-3p-3f and lbf-15x15-4p-3f, threshold 0.95), TROUPE (a troupe binary; default: built from this tree into OUTDIR),
# STAGE (iterations between greedy evaluations, default 10).
# Extra --set flags go to every training run (for tuning, e.g. TASKS=lbf).
#
# Each run trains in stages of STAGE iterations (`troupe train --resume`
# continues bit-for-bit, so the stages change nothing) and after every
# stage evaluates the greedy policy on the held-out seeds (`troupe eval`),
# which gives the environment steps at which the greedy return first
# reached the threshold. Printed per seed: the final greedy return (team
# reward counted once, the env's metric "return"), the env steps used, the
# env steps to the threshold (plateau anchor 175 / 50, LBF 0.95) and to the
# optimum (275 / 250, LBF 1.0 is not required), and the training wall time
# (evaluation excluded), and the min/mean greedy return over the evaluations
# in the last quarter of training. Results land in OUTDIR/results.tsv and
# OUTDIR/table.md; each run directory is OUTDIR/TASK-sSEED.
set -euo pipefail
cd "$(dirname "$0")/.."

out=runs/validate-$(date +%Y%m%d-%H%M%S)
if [[ $# -gt 0 && "$1" != --* ]]; then
  out=$1
  shift
fi
extra=("$@")
seeds=${SEEDS:-"1 2 3 4 5"}
tasks=${TASKS:-"climbing penalty lbf"}
mkdir -p "$out"

for tool in jq awk; do
  command -v "$tool" >/dev/null || { echo "validate.sh: needs $tool" >&2; exit 2; }
done
troupe=${TROUPE:-}
if [[ -z "$troupe" ]]; then
  troupe=$out/troupe
  go build -o "$troupe" ./cmd/troupe
fi

# task parameters: stage (iterations between greedy evaluations),
# threshold (plateau anchor, or 0.95 for LBF), optimum.
stage_of()     { if [[ -n ${STAGE:-} ]]; then echo "$STAGE"; else echo 10; fi; }
threshold_of() { case $1 in climbing) echo 175 ;; penalty) echo 50 ;; lbf | lbf-*) echo 0.95 ;; esac; }
optimum_of()   { case $1 in climbing) echo 275 ;; penalty) echo 250 ;; lbf | lbf-*) echo 1 ;; esac; }

# iterations_of FILE prints train.iterations of an agentfile.
iterations_of() {
  awk '/^\[/{t=($0=="[train]")} t && $1=="iterations"{print $3}' "$1"
}

TIMEFORMAT='%R %U %S'

# train_stage TASK SEED DIR IT trains the run in DIR up to iteration IT.
train_stage() {
  if [[ ! -d "$3" ]]; then
    "$troupe" train -f "examples/$1/agentfile.toml" --out "$3" --no-eval --set project.seed="$2" \
      "${extra[@]}" --set train.iterations="$4" >"$3.log" 2>&1
  else
    "$troupe" train --resume "$3" --no-eval --set train.iterations="$4" >>"$3.log" 2>&1
  fi
}
ge()  { awk -v a="$1" -v b="$2" 'BEGIN{exit !(a >= b - 1e-9)}'; }

tsv=$out/results.tsv
printf 'task\tseed\tfinal_greedy_return\tenv_steps\tsteps_to_threshold\tsteps_to_optimum\ttrain_wall_s\ttrain_cpu_s\tlast_quarter_min/mean\n' >"$tsv"
echo "validate: writing $out (seeds: $seeds; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %4s %13s %10s %13s %13s %8s %8s %12s\n' task seed final_greedy env_steps to_threshold to_optimum wall_s cpu_s last_q_min/mean

for task in $tasks; do
  file=examples/$task/agentfile.toml
  total=$(iterations_of "$file")
  # an extra --set train.iterations=N sets the total (the stages set it too)
  for ((i = 0; i + 1 < ${#extra[@]}; i++)); do
    if [[ ${extra[i]} == --set && ${extra[i+1]} == train.iterations=* ]]; then
      total=${extra[i+1]#train.iterations=}
    fi
  done
  stage=$(stage_of "$task")
  thr=$(threshold_of "$task")
  opt=$(optimum_of "$task")
  for seed in $seeds; do
    dir=$out/$task-s$seed
    rm -rf "$dir" "$dir.log" "$dir.curve.tsv"
    wall=0 cpu=0
    to_thr=- to_opt=- ret=- steps=0
    it=0
    while ((it < total)); do
      it=$((it + stage > total ? total : it + stage))
      if ! { time train_stage "$task" "$seed" "$dir" "$it"; } 2>"$dir.time"; then
        echo "validate: training $task seed $seed failed; see $dir.log" >&2
        exit 1
      fi
      read -r r u s <"$dir.time"
      wall=$(awk -v w="$wall" -v r="$r" 'BEGIN{printf "%.2f", w + r}')
      cpu=$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", c + u + s}')
      steps=$(tail -n 1 "$dir/metrics.jsonl" | jq '.env_steps')
      ret=$("$troupe" eval -f "$dir/config.toml" --policy "$dir/policy.safetensors" --json \
        --set 'eval.policies=["grpo"]' | jq '.policies.grpo.metrics.return')
      printf '%s\t%s\t%s\n' "$it" "$steps" "$ret" >>"$dir.curve.tsv"
      if [[ $to_thr == - ]] && ge "$ret" "$thr"; then to_thr=$steps; fi
      if [[ $to_opt == - ]] && ge "$ret" "$opt"; then to_opt=$steps; fi
    done
    rm -f "$dir.time"
    # min/mean greedy return over the evaluations of the last quarter of
    # training: how steady the end is
    last=$(awk -v n="$(wc -l <"$dir.curve.tsv")" 'NR > n - int((n + 3) / 4) {s += $3; k++; if (k == 1 || $3 < m) m = $3}
      END {printf "%.3g/%.3g", m, s / k}' "$dir.curve.tsv")
    ret=$(awk -v r="$ret" 'BEGIN{printf "%.4g", r}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$task" "$seed" "$ret" "$steps" "$to_thr" "$to_opt" "$wall" "$cpu" "$last" >>"$tsv"
    printf '%-9s %4s %13s %10s %13s %13s %8s %8s %12s\n' "$task" "$seed" "$ret" "$steps" "$to_thr" "$to_opt" "$wall" "$cpu" "$last"
  done
done

# Summary table (markdown), one row per task.
awk -F'\t' '
  function add(list, x) { return list == "" ? x : list ", " x }
  BEGIN {
    thrval["climbing"] = 175; thrval["penalty"] = 50; thrval["lbf"] = 0.95
    optval["climbing"] = 275; optval["penalty"] = 250; optval["lbf"] = 1
    anchor["lbf-10x10-3p-3f"] = anchor["lbf-15x15-4p-3f"] = "stated target 0.95 (see BENCHMARKS.md)"
  }
  $1 ~ /^lbf-/ { thrval[$1] = 0.95; optval[$1] = 1; thrname[$1] = "0.95" }
  NR == 1 { next }
  {
    t = $1
    if (!(t in n)) order[++k] = t
    n[t]++; sum[t] += $3; rets[t] = add(rets[t], $3)
    if ($3 >= thrval[t] - 1e-9) thr[t]++
    if ($3 >= optval[t] - 1e-9) opt[t]++
    if ($4 > maxsteps[t]) maxsteps[t] = $4
    tothr[t] = add(tothr[t], $5 == "-" ? "never" : sprintf("%.2gM", $5 / 1e6))
    toopt[t] = add(toopt[t], $6 == "-" ? "never" : sprintf("%.2gM", $6 / 1e6))
    l10[t] = add(l10[t], $9)
    w[t] = add(w[t], sprintf("%.3g", $7)); wsum[t] += $7; csum[t] += $8
  }
  END {
    anchor["climbing"] = "175 (optimum 275)"; anchor["penalty"] = "50 (optimum 250)"; anchor["lbf"] = "1.00 after 20M steps (here: ≥ 0.95 within 2M)"
    thrname["climbing"] = "175"; thrname["penalty"] = "50"; thrname["lbf"] = "0.95"
    print "| task | anchor (IPPO/MAPPO) | final greedy return per seed | mean | seeds ending ≥ threshold | seeds ending at optimum | env steps per run (max) | env steps to first reach the threshold, per seed | … the optimum, per seed | greedy return in the last quarter of training, min/mean per seed | train wall s per seed (mean; mean CPU s) |"
    print "|---|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= k; i++) {
      t = order[i]
      printf "| %s | %s | %s | %.4g | %d/%d (≥ %s) | %d/%d | %.2gM | %s | %s | %s | %s (%.3g; %.3g) |\n", t, anchor[t], rets[t], sum[t] / n[t], thr[t], n[t], thrname[t], opt[t], n[t], maxsteps[t] / 1e6, tothr[t], toopt[t], l10[t], w[t], wsum[t] / n[t], csum[t] / n[t]
    }
  }' "$tsv" | tee "$out/table.md"
echo "validate: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
