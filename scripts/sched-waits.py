#!/usr/bin/env python3
"""Which tasks held a CPU while a real-time thread waited for it.

Records the scheduler for a few seconds (`perf sched record -a`, needs root), takes the real-time threads of the
machine at that moment (`ps`, class FF or RR), and lists every wake-up of one of them that waited longer than the
threshold before it ran, with the task that held the CPU just before it. Run it beside a recording (docs/notes/
architecture-history.md, "Wide recorders: where the time goes"):

    scripts/sched-waits.py --seconds 6 --threshold-ms 0.2

On this 2-vCPU VM perf recorded no event of one CPU's idle task (a wake-up from idle there, and the switch from
idle, never appear), so waits on that CPU can go unseen: the script says so when a CPU has no idle rows.
"""
import argparse, collections, os, re, subprocess, sys, tempfile, threading, time


def realtime_tids():
    out = subprocess.run(["ps", "-eLo", "tid=,cls=,comm="], capture_output=True, text=True).stdout
    tids = {}
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in ("FF", "RR"):
            tids[parts[0]] = parts[2]
    return tids


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--threshold-ms", type=float, default=0.2)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    data = os.path.join(tempfile.mkdtemp(prefix="sched-waits-"), "perf.data")
    tids = {}
    sampler = threading.Timer(args.seconds / 2, lambda: tids.update(realtime_tids()))
    sampler.start()
    subprocess.run(["perf", "sched", "record", "-a", "-o", data, "--", "sleep", str(args.seconds)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    sampler.join()
    text = subprocess.run(["perf", "sched", "timehist", "-i", data], capture_output=True, text=True).stdout
    row = re.compile(r"^\s*([\d.]+)\s+\[(\d+)\]\s+(.+?)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
    last = {}
    waits, holders, longest = 0, collections.Counter(), []
    wakeups = 0
    cpus, idle = set(), set()
    idle_row = re.compile(r"^\s*[\d.]+\s+\[(\d+)\]\s+<idle>")
    for line in text.splitlines():
        i = idle_row.match(line)
        if i:
            idle.add(i.group(1))
            continue
        m = row.match(line)
        if not m:
            continue
        _, cpu, name, tid, _, _, delay, run = m.groups()
        cpus.add(cpu)
        if tid in tids:
            wakeups += 1
            if float(delay) >= args.threshold_ms and cpu in last:
                waits += 1
                holder = last[cpu]
                key = re.sub(r"\d+$", "", holder[0].strip())
                holders[key] += 1
                longest.append((float(delay), name.strip(), holder[0].strip(), holder[1]))
        last[cpu] = (name, float(run))
    print("real-time threads: %s" % ", ".join(sorted(set(tids.values()))))
    print("%d switches of real-time threads in %.0f s; %d waited >= %.2f ms for a CPU" % (
        wakeups, args.seconds, waits, args.threshold_ms))
    for key, n in holders.most_common(args.top):
        print("  held by %-32s %d" % (key, n))
    for delay, name, holder, ran in sorted(longest, reverse=True)[:5]:
        print("  longest: %s waited %.3f ms behind %s (which had run %.3f ms)" % (name, delay, holder, ran))
    for cpu in sorted(cpus - idle, key=int):
        print("  warning: no idle-task events on CPU %d: wake-ups from idle there are not in this trace" % int(cpu))


if __name__ == "__main__":
    sys.exit(main())
