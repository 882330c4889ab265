#!/usr/bin/env python3
"""Paired comparison of two scripts/validate.sh runs over the same seeds.

  scripts/paired_steps.py A_DIR B_DIR TASK THRESHOLD [BUDGET_STEPS]
  scripts/paired_steps.py --train A_DIR B_DIR TASK THRESHOLD

For each seed: env steps at which the greedy return first reached THRESHOLD
(None if never), and the greedy return at the last evaluation at or below
BUDGET_STEPS (default: the smallest final env-step count of all runs).
With --train, instead: env steps at which the training return (metrics.return
of metrics.jsonl: the sampled policy on the iteration's episodes), averaged
over 5 consecutive iterations, first reached THRESHOLD.
Prints per seed, and the paired difference B - A with a 95 % t interval
over the seeds where both values exist (t with n-1 degrees of freedom).
"""
import glob, json, math, os, sys

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def curve(path):
    rows = []
    for line in open(path):
        it, steps, ret = line.split()
        rows.append((int(it), int(steps), float(ret)))
    return rows


def first_at(rows, thr):
    for _, s, r in rows:
        if r >= thr - 1e-9:
            return s
    return None


def at_budget(rows, budget):
    best = None
    for _, s, r in rows:
        if s <= budget:
            best = r
    return best


def ci(xs):
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return m, float("nan"), float("nan")
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = T95.get(n - 1, 1.96) * sd / math.sqrt(n)
    return m, m - h, m + h


def train_first(run, thr, window=5):
    rows = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl")) if line.strip()]
    rets = [r["metrics"]["return"] for r in rows]
    for i in range(window - 1, len(rows)):
        if sum(rets[i - window + 1 : i + 1]) / window >= thr - 1e-9:
            return rows[i]["env_steps"]
    return None


def main_train(a, b, task, thr):
    seeds = sorted(int(p.rsplit("-s", 1)[1].split(".")[0]) for p in glob.glob(os.path.join(a, task + "-s*.curve.tsv")))
    print(f"training return (5-iteration mean) >= {thr}")
    print("seed\tA steps\tB steps")
    d = []
    for s in seeds:
        sa, sb = train_first(os.path.join(a, f"{task}-s{s}"), thr), train_first(os.path.join(b, f"{task}-s{s}"), thr)
        print(f"{s}\t{sa}\t{sb}")
        if sa is not None and sb is not None:
            d.append(sb - sa)
    if d:
        m, lo, hi = ci(d)
        print(f"B - A over {len(d)} seeds where both reached: {m:.0f} [{lo:.0f}, {hi:.0f}]")


def main():
    if sys.argv[1] == "--train":
        return main_train(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    a, b, task, thr = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    seeds = sorted(int(p.rsplit("-s", 1)[1].split(".")[0]) for p in glob.glob(os.path.join(a, task + "-s*.curve.tsv")))
    ca = {s: curve(os.path.join(a, f"{task}-s{s}.curve.tsv")) for s in seeds}
    cb = {s: curve(os.path.join(b, f"{task}-s{s}.curve.tsv")) for s in seeds}
    budget = int(sys.argv[5]) if len(sys.argv) > 5 else min(min(c[-1][1] for c in ca.values()), min(c[-1][1] for c in cb.values()))
    print(f"threshold {thr}, budget {budget} env steps")
    print("seed\tA steps to thr\tB steps to thr\tA return at budget\tB return at budget\tA final\tB final")
    dsteps, dret = [], []
    for s in seeds:
        sa, sb = first_at(ca[s], thr), first_at(cb[s], thr)
        ra, rb = at_budget(ca[s], budget), at_budget(cb[s], budget)
        print(f"{s}\t{sa}\t{sb}\t{ra:.3f}\t{rb:.3f}\t{ca[s][-1][2]:.3f} ({ca[s][-1][1]})\t{cb[s][-1][2]:.3f} ({cb[s][-1][1]})")
        if sa is not None and sb is not None:
            dsteps.append(sb - sa)
        dret.append(rb - ra)
    reached_a = sum(first_at(ca[s], thr) is not None for s in seeds)
    reached_b = sum(first_at(cb[s], thr) is not None for s in seeds)
    print(f"reached: A {reached_a}/{len(seeds)}, B {reached_b}/{len(seeds)}")
    if dsteps:
        m, lo, hi = ci(dsteps)
        print(f"steps to thr, B - A over {len(dsteps)} seeds where both reached: {m:.0f} [{lo:.0f}, {hi:.0f}]")
    m, lo, hi = ci(dret)
    print(f"return at budget, B - A over {len(dret)} seeds: {m:.3f} [{lo:.3f}, {hi:.3f}]")


if __name__ == "__main__":
    main()
