#!/usr/bin/env python3
"""Turn `troupe eval --json` output into the Markdown tables of BENCHMARKS.md.

    troupe eval ... --json > eval.json
    scripts/eval-table.py eval.json [--by-task] [METRIC ...]

Prints one table of every policy (joint reward, each METRIC, speedup,
tokens, makespan, failed share: mean [95 % interval]) and, when the trained
policy was evaluated, one of its paired differences to every other policy
(grpo − NAME: joint reward and each METRIC, mean [95 % interval], pairs;
with the joint reward's interval over task instances, "by task", when the
env reports them); then the same for the best baseline against every
other policy but grpo (BEST − NAME: is the best rule better than the next
ones, or level with them). With --by-task, a last table splits the
trained policy's joint-reward difference task instance by instance (the
JSON's by_task: one row per document or class, with the seeds that played
it).
The best baseline is marked *, baselines outside the task †. It only
formats what the JSON holds: every figure comes from the evaluation.
"""
import json
import sys


def cell(mean, iv, fmt):
    if mean is None:
        return "–"
    s = fmt % mean
    if iv and iv.get("lo") is not None:
        s += " [" + fmt % iv["lo"] + ", " + fmt % iv["hi"] + "]"
    return s


def order(rep):
    names = list(rep["policies"])
    first = (["grpo"] if "grpo" in names else []) + [b for b in rep.get("baselines") or [] if b in names]
    if "random" in names:
        first.append("random")
    return first + sorted(n for n in names if n not in first)


def mark(rep, name):
    if name == rep.get("best_baseline"):
        return name + "*"
    if name in (rep.get("outside_task") or []):
        return name + "†"
    return name


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rep = json.load(f)
    by_task = "--by-task" in sys.argv[2:]
    metrics = [a for a in sys.argv[2:] if a != "--by-task"]
    print(f"env {rep['env']}, {rep['episodes']} episodes per policy (eval seed {rep['seed']}), LLM backend: {rep['backend']}\n")
    head = ["policy", "joint reward"] + metrics + ["speedup", "tokens", "makespan s", "failed"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in order(rep):
        p = rep["policies"][n]
        ci = p.get("ci95") or {}
        row = [mark(rep, n), cell(p["reward"], ci.get("reward"), "%.3f")]
        for m in metrics:
            row.append(cell(p["metrics"].get(m), (ci.get("metrics") or {}).get(m), "%.3f"))
        row.append(cell(p["speedup"], ci.get("speedup"), "%.2f") if p.get("speedup") else "–")
        row.append(cell(p["tokens"], ci.get("tokens"), "%.0f"))
        row.append(cell(p["makespan_s"], ci.get("makespan_s"), "%.1f"))
        row.append(f"{p['failed_episodes']} ({100 * p['failed_share']:.0f} %)")
        print("| " + " | ".join(row) + " |")
    paired = rep.get("paired") or {}
    print_paired(rep, paired, "grpo −", metrics)
    best = rep.get("best_baseline")
    print_paired(rep, rep.get("best_baseline_paired") or {}, f"{best} −", metrics)
    if paired and by_task:
        print_by_task(rep, paired)


def print_paired(rep, paired, label, metrics):
    """Prints one table of paired differences, LABEL NAME for each NAME of paired."""
    if not paired:
        return
    print()
    tasks = max((d["reward_by_task"]["tasks"] for d in paired.values() if d.get("reward_by_task")), default=0)
    head = [label, "joint reward"] + ([f"joint reward, by task ({tasks})"] if tasks else []) + metrics + ["pairs"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in order(rep):
        if n not in paired:
            continue
        d = paired[n]
        row = [mark(rep, n), cell(d["reward"]["mean"], d["reward"]["ci95"], "%+.3f")]
        if tasks:
            t = d.get("reward_by_task")
            row.append(cell(t["mean"], t["ci95"], "%+.3f") if t else "–")
        for m in metrics:
            x = (d.get("metrics") or {}).get(m)
            row.append(cell(x["mean"], x["ci95"], "%+.3f") if x else "–")
        row.append(str(d["pairs"]) + (f" ({d['excluded']} excl.)" if d.get("excluded") else ""))
        print("| " + " | ".join(row) + " |")


def print_by_task(rep, paired):
    others = [n for n in order(rep) if n in paired and paired[n].get("by_task")]
    if not others:
        sys.exit("eval-table.py: --by-task: the JSON has no by_task (the env reports no task instances, or troupe is older than the by_task field)")
    rows = {}  # task -> (name, seeds, {policy: cell})
    for n in others:
        for t in paired[n]["by_task"]:
            name, seeds, cells = rows.get(t["task"], (t.get("name") or str(t["task"]), 0, {}))
            cells[n] = cell(t["reward"]["mean"], t["reward"]["ci95"], "%+.3f")
            rows[t["task"]] = (name, max(seeds, t["pairs"]), cells)
    print()
    head = ["task", "seeds"] + ["grpo − " + mark(rep, n) for n in others]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k in sorted(rows):
        name, seeds, cells = rows[k]
        print("| " + " | ".join([name, str(seeds)] + [cells.get(n, "–") for n in others]) + " |")


if __name__ == "__main__":
    main()
