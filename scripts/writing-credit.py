#!/usr/bin/env python3
"""Summarises a scripts/writing-credit.sh run directory.

  scripts/writing-credit.py OUTDIR TARGET [BASE [OTHER...]]

TARGET is the greedy joint reward to reach on the evaluation seeds (fixed
before the runs: the best baseline's). BASE (default "joint") is the credit
the others are compared with (default: every other credit in results.tsv).
Prints, per credit and seed, the first evaluated iteration whose greedy mean
is >= TARGET (episodes and env steps to it, cumulative, from metrics.jsonl),
the first whose paired interval grpo - read_once_longest reaches 0 or above,
and the last evaluation; then the paired differences OTHER - BASE over the
seeds (same seed = same task seeds and evaluation seeds) with a 95 % t
interval (n - 1 degrees of freedom) for: episodes and env steps to TARGET
(seeds where both reached it), the final greedy reward, and the held-out
reward of heldout.tsv.
"""
import os
import sys

sys.dont_write_bytecode = True  # no scripts/__pycache__ from the import below
from paired_steps import ci  # noqa: E402 (mean and 95 % t interval over paired differences)


def load(out):
    runs = {}  # (credit, seed) -> rows sorted by iteration
    for line in open(os.path.join(out, "results.tsv")):
        f = line.split()
        if len(f) != 11:
            continue
        row = dict(it=int(f[2]), eps=int(f[3]), steps=int(f[4]), g=float(f[5]), glo=float(f[6]), ghi=float(f[7]),
                   d=float(f[8]), dlo=float(f[9]), dhi=float(f[10]))
        runs.setdefault((f[0], int(f[1])), []).append(row)
    for rows in runs.values():
        rows.sort(key=lambda r: r["it"])
    held = {}
    p = os.path.join(out, "heldout.tsv")
    if os.path.exists(p):
        for line in open(p):
            f = line.split()
            if len(f) == 11:
                held[(f[0], int(f[1]))] = [float(x) for x in f[2:]]
    return runs, held


def first(rows, pred):
    for r in rows:
        if pred(r):
            return r
    return None


def fmt_ci(m, lo, hi, d=4):
    return f"{m:+.{d}f} [{lo:+.{d}f}, {hi:+.{d}f}]"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, target = sys.argv[1], float(sys.argv[2])
    runs, held = load(out)
    base = sys.argv[3] if len(sys.argv) > 3 else "joint"
    credits = sorted({c for c, _ in runs})
    others = sys.argv[4:] or [c for c in credits if c != base]
    print(f"target {target} (greedy joint reward, evaluation seeds)\n")
    print("| credit, seed | first evaluation ≥ target: iteration, episodes, env steps | first evaluation with grpo − read_once_longest interval reaching 0 | last evaluation: grpo | grpo − read_once_longest | held-out grpo − read_once_longest | held-out grpo − read_once_ready |")
    print("|---|---|---|---|---|---|---|")
    for c in [base] + others:
        for s in sorted(x for cc, x in runs if cc == c):
            rows = runs[(c, s)]
            hit = first(rows, lambda r: r["g"] >= target - 1e-12)
            best = max(rows, key=lambda r: r["g"])
            if hit:
                h = f"it {hit['it']}: {hit['eps']} episodes, {hit['steps'] / 1e3:.0f} k steps ({hit['g']:.4f})"
            else:
                h = f"never (best: it {best['it']}, {best['g']:.4f})"
            z = first(rows, lambda r: r["dhi"] >= 0)
            zs = f"it {z['it']}: {z['eps']} episodes, {z['steps'] / 1e3:.0f} k steps" if z else "never"
            last = rows[-1]
            hd = held.get((c, s))
            hl = fmt_ci(*hd[3:6]) if hd else "–"
            hr = fmt_ci(*hd[6:9]) if hd else "–"
            print(f"| {c}, seed {s} | {h} | {zs} | it {last['it']}: {last['g']:.4f} [{last['glo']:.4f}, {last['ghi']:.4f}] | {fmt_ci(last['d'], last['dlo'], last['dhi'])} | {hl} | {hr} |")
    for o in others:
        seeds = sorted(s for c, s in runs if c == o and (base, s) in runs)
        print(f"\npaired {o} − {base}, seeds {seeds}:")
        for what, key in (("episodes to target", "eps"), ("env steps to target", "steps")):
            xs = []
            for s in seeds:
                a = first(runs[(base, s)], lambda r: r["g"] >= target - 1e-12)
                b = first(runs[(o, s)], lambda r: r["g"] >= target - 1e-12)
                if a and b:
                    xs.append(b[key] - a[key])
            reached = {c: sum(1 for s in seeds if first(runs[(c, s)], lambda r: r["g"] >= target - 1e-12)) for c in (base, o)}
            if xs:
                print(f"  {what}: {fmt_ci(*ci(xs), d=0)} over {len(xs)} seeds where both reached it (reached: {base} {reached[base]}/{len(seeds)}, {o} {reached[o]}/{len(seeds)})")
            else:
                print(f"  {what}: no seed where both reached it (reached: {base} {reached[base]}/{len(seeds)}, {o} {reached[o]}/{len(seeds)})")
        common = sorted({r["it"] for s in seeds for r in runs[(base, s)]} & {r["it"] for s in seeds for r in runs[(o, s)]})
        for it in common:
            xs = []
            for s in seeds:
                a = [r for r in runs[(base, s)] if r["it"] == it]
                b = [r for r in runs[(o, s)] if r["it"] == it]
                if a and b:
                    xs.append(b[0]["g"] - a[0]["g"])
            if len(xs) == len(seeds):
                print(f"  greedy reward at it {it}: {fmt_ci(*ci(xs))}")
        xs = [held[(o, s)][0] - held[(base, s)][0] for s in seeds if (o, s) in held and (base, s) in held]
        if xs:
            print(f"  held-out greedy reward, last evaluation: {fmt_ci(*ci(xs))} over {len(xs)} seeds")


if __name__ == "__main__":
    main()
