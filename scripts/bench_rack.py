#!/usr/bin/env python3
"""Tandem's rack against jalv and ecasound, hosting the same light plugin (SWH amp, mono, at a non-default gain).

For each period (64, 256) and chain length (1, 8, 32 instances) one private dummy JACK server is started (48 kHz,
real-time scheduling when the machine allows it); on it, one after another:
  tandem      one `tandem rack` process running the whole chain
  tandem-ladspa  the same, with the amp's LADSPA build (swh amp_1181.so): the LADSPA glue's cost
  tandem-iso  `tandem run` with the same rack isolated (the session plus the rack's child process)
  jalv        N jalv processes chained by JACK connections
  ecasound    one ecasound process with N -elv2 operators (when ecasound is installed)
  floor       the bare JACK client (bench-client thru): input to output times the same gain, N times, and nothing
              else; its main thread sleeps. No host can cost less than a client that is only that
each fed by the same looping noise generator (bench/bench-client.c) while the monitor client counts xruns and
samples the DSP load. Figures:
  CPU s per audio s   on-CPU time of every process of the tool (all threads, /proc/PID/task/*/schedstat, ns),
                      over the measuring window, divided by the window
  DSP mean / max      jack_cpu_load() over the window, %
  xruns               xrun callbacks in the window
  added latency       jack_iodelay's round trip through the tool minus its round trip through a plain loop, frames
  private memory      RssAnon of every process of the tool, summed, MiB
The section between <!-- rack:begin --> and <!-- rack:end --> of docs/PERFORMANCE.md is replaced (appended when
missing); the rest of the file is left alone. scripts/bench.py rewrites the whole file, so `make bench` runs it first.

    scripts/bench_rack.py            # full: 10 s windows, periods 64 and 256, 1/8/32 instances (about 10 minutes)
    scripts/bench_rack.py --quick    # 3 s windows, period 64, 1 and 32 instances
"""
import argparse, datetime, glob, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import bench as B  # noqa: E402  (its helpers: Proc, Server, LineCollector, helper, noise)

ROOT = B.ROOT
RATE = B.RATE
URI = "http://plugin.org.uk/swh-plugins/amp"
LADSPA_URI = "ladspa:amp_1181/amp"
GAIN = -0.5
BEGIN, END = "<!-- rack:begin -->", "<!-- rack:end -->"
log = B.log


def run(argv, env, timeout=10):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def ports(env):
    return set(run(["jack_lsp"], env).stdout.split("\n"))


def wait_ports(env, names, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if set(names) <= ports(env):
            return True
        time.sleep(0.1)
    return False


def connect(env, a, b):
    r = run(["jack_connect", a, b], env)
    if r.returncode != 0:
        raise RuntimeError("jack_connect %s %s: %s" % (a, b, r.stderr.strip()))


def disconnect(env, a, b):
    run(["jack_disconnect", a, b], env)


def sessions_pids(sids):
    """Every process whose session id is one of `sids` (each tool is started in a session of its own)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/stat") as f:
                s = f.read()
            if int(s[s.rindex(")") + 2:].split()[3]) in sids:
                out.append(int(d[6:]))
        except (OSError, ValueError):
            pass
    return out


def cpu_ns(pids):
    """On-CPU ns of every thread of `pids`: all of them, and those not scheduled real-time (policy 0: the control
    threads, not JACK's process thread)."""
    total = other = 0
    for pid in pids:
        for t in glob.glob("/proc/%d/task/*" % pid):
            try:
                with open(t + "/schedstat") as f:
                    ns = int(f.read().split()[0])
                with open(t + "/stat") as f:
                    policy = int(f.read().rsplit(")", 1)[1].split()[38])
            except (OSError, ValueError, IndexError):
                continue
            total += ns
            if policy == 0:
                other += ns
    return total, other


def anon_kb(pids):
    return sum(B.proc_status(pid).get("RssAnon", 0) for pid in pids)


class Tool:
    """One configuration of one host: how to start it, its input and output port, how to stop it."""
    def __init__(self, name, env, workdir):
        self.name, self.env, self.workdir = name, env, workdir
        self.procs = []

    def spawn(self, argv, label, stdin_pipe=False):
        out = open(os.path.join(self.workdir, label + ".log"), "w")
        p = subprocess.Popen(argv, env=self.env, stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def pids(self):
        return sessions_pids({p.pid for p in self.procs})

    def stop(self):
        # jalv's console waits on stdin: its end (and SIGTERM) lets it return. One deadline for all of them.
        for p in self.procs:
            if p.stdin:
                p.stdin.close()
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
        self.procs = []


def start_tandem(tool, n, tandem):
    argv = [tandem, "rack", "--name", "trk", "--client", "trk", "--inputs", "1", "--outputs", "1", "--no-view"]
    for i in range(n):
        argv += ["--plugin", "%s,name=a%d,gain=%s" % (URI, i + 1, GAIN)]
    tool.spawn(argv, "tandem")
    return "trk:in_1", "trk:out_1"


def start_tandem_ladspa(tool, n, tandem):
    """The same amp in its LADSPA build (swh's amp_1181.so), by `tandem rack`: the cost of the LADSPA glue."""
    argv = [tandem, "rack", "--name", "trk", "--client", "trk", "--inputs", "1", "--outputs", "1", "--no-view"]
    for i in range(n):
        argv += ["--plugin", "%s,name=a%d,amps_gain_db=%s" % (LADSPA_URI, i + 1, GAIN)]
    tool.spawn(argv, "tandem-ladspa")
    return "trk:in_1", "trk:out_1"


def start_tandem_isolated(tool, n, tandem):
    path = os.path.join(tool.workdir, "iso-%d.toml" % n)
    lines = ['[session]', 'name = "benchiso%d"' % n, 'directory = "%s"' % tool.workdir, 'save_plugins = false', '',
             '[[rack]]', 'name = "trk"', 'client = "trk"', 'inputs = ["in_1"]', 'outputs = ["out_1"]',
             'isolate = true']
    for i in range(n):
        lines += ['[[rack.plugins]]', 'uri = "%s"' % URI, 'name = "a%d"' % (i + 1), 'controls = { gain = %s }' % GAIN]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    tool.spawn([tandem, "run", path, "--no-view"], "tandem-iso")
    return "trk:in_1", "trk:out_1"


def start_jalv(tool, n, _):
    for i in range(n):
        # jalv reads commands from stdin and ends at its end: give it a pipe that stays open.
        tool.spawn(["jalv", "-x", "-n", "jalv%d" % (i + 1), "-c", "gain=%s" % GAIN, URI], "jalv%d" % (i + 1),
                   stdin_pipe=True)
        if not wait_ports(tool.env, ["jalv%d:output" % (i + 1)]):
            raise RuntimeError("jalv%d did not start" % (i + 1))
    for i in range(1, n):
        connect(tool.env, "jalv%d:output" % i, "jalv%d:input" % (i + 1))
    return "jalv1:input", "jalv%d:output" % n


def start_ecasound(tool, n, _):
    argv = ["ecasound", "-q", "-B:rt", "-z:nodb", "-z:nointbuf", "-f:f32_le,1,%d" % RATE,
            "-G:jack,eca,notransport", "-i:jack", "-o:jack"]
    argv += ["-elv2:%s,%s" % (URI, GAIN)] * n
    tool.spawn(argv, "ecasound", stdin_pipe=True)
    return "eca:in_1", "eca:out_1"


# The bench client (built by `main`), for the floor.
EXE = None


def start_floor(tool, n, _):
    tool.spawn([EXE, "thru", "floor", str(n), "%.9g" % (10 ** (GAIN / 20))], "floor")
    return "floor:in_1", "floor:out_1"


STARTERS = [("tandem", start_tandem), ("tandem-ladspa", start_tandem_ladspa), ("tandem-iso", start_tandem_isolated), ("jalv", start_jalv),
            ("ecasound", start_ecasound), ("floor", start_floor)]


def iodelay(env, out_port, in_port, seconds=2.5):
    """jack_iodelay's round trip (frames) from its output through out_port..in_port back to its input."""
    p = subprocess.Popen(["stdbuf", "-oL", "jack_iodelay"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        if not wait_ports(env, ["jack_delay:out", "jack_delay:in"], 5):
            return None
        connect(env, "jack_delay:out", out_port)
        connect(env, in_port, "jack_delay:in")
        time.sleep(seconds)
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        text = p.communicate(timeout=5)[0]
    found = re.findall(r"([\d.]+) frames\s+[\d.]+ ms total roundtrip latency", text)
    return float(found[-1]) if found else None


def measure(server_env, mon, tool_name, starter, n, tandem, workdir, seconds, latency=True):
    tool = Tool(tool_name, server_env, workdir)
    row = dict(tool=tool_name, n=n)
    try:
        tin, tout = starter(tool, n, tandem)
        if not wait_ports(server_env, [tin, tout], 20):
            raise RuntimeError("%s: ports %s, %s did not appear" % (tool_name, tin, tout))
        connect(server_env, "gen:out_1", tin)
        time.sleep(2.0)
        pids = tool.pids()
        t0, (c0, o0) = time.monotonic(), cpu_ns(pids)
        peak = 0
        while time.monotonic() - t0 < seconds:
            time.sleep(0.25)
            peak = max(peak, anon_kb(pids))
        t1, (c1, o1) = time.monotonic(), cpu_ns(pids)
        loads = [float(l[2]) for l in mon.lines if l and l[0] == "LOAD" and t0 <= float(l[1]) <= t1]
        xr = [l for l in mon.lines if l and l[0] == "XRUN" and t0 <= float(l[1]) <= t1]
        alive = all(p.poll() is None for p in tool.procs)
        row.update(cpu=(c1 - c0) / 1e9 / (t1 - t0), cpu_other=(o1 - o0) / 1e9 / (t1 - t0), dsp_mean=sum(loads) / len(loads) if loads else float("nan"),
                   dsp_max=max(loads) if loads else float("nan"), xruns=len(xr), mem_mib=peak / 1024.0,
                   processes=len(pids), alive=alive)
        disconnect(server_env, "gen:out_1", tin)
        if latency:
            row["roundtrip"] = iodelay(server_env, tin, tout)
    except Exception as e:  # a tool that cannot run here is a row that says why, not a failed benchmark
        row["error"] = str(e)
        log("%s x%d: %s" % (tool_name, n, e))
    finally:
        tool.stop()
        time.sleep(0.5)
    return row


def combine(runs):
    """One row from a tool's rounds: the first round's row (latency, memory) with the medians of CPU and DSP load and
    the xruns summed; every round's CPU is kept in `cpu_runs`."""
    good = [r for r in runs if "cpu" in r]
    if not good:
        return runs[0]
    row = dict(good[0])
    for key in ("cpu", "cpu_other", "dsp_mean", "dsp_max"):
        if all(key in r for r in good):
            row[key] = statistics.median(r[key] for r in good)
    row["xruns"] = sum(r["xruns"] for r in good)
    row["mem_mib"] = max(r["mem_mib"] for r in good)
    row["cpu_runs"] = ",".join("%.5f" % r["cpu"] for r in good)
    row["rounds"] = len(good)
    return row


def configuration(period, n, tools, tandem, exe, raw, workdir, rt, seconds, rounds=1):
    name = "rackbench%d" % os.getpid()
    server = B.Server(name, period, 1, rt, workdir)
    env = server.env
    rows = []
    mon = gen = None
    try:
        mon = B.Proc([exe, "mon", "mon"], env, stdout=subprocess.PIPE)
        monlines = B.LineCollector(mon)
        monlines.ready.wait(10)
        gen = B.Proc([exe, "gen", "gen", "1", raw], env)
        if not wait_ports(env, ["gen:out_1"]):
            raise RuntimeError("the generator did not start")
        # The plain loop: jack_iodelay's output straight to its input (its own round trip, the zero line).
        p = subprocess.Popen(["stdbuf", "-oL", "jack_iodelay"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)
        if wait_ports(env, ["jack_delay:out", "jack_delay:in"], 5):
            connect(env, "jack_delay:out", "jack_delay:in")
            time.sleep(2.5)
        os.killpg(p.pid, signal.SIGTERM)
        found = re.findall(r"([\d.]+) frames\s+[\d.]+ ms total roundtrip latency", p.communicate(timeout=5)[0])
        base = float(found[-1]) if found else None
        runs = {name: [] for name, _ in tools}
        for k in range(rounds):
            # The order alternates between rounds, so a slow stretch of the machine does not fall on one tool.
            for tool_name, starter in (tools if k % 2 == 0 else list(reversed(tools))):
                log("period %d, %d instance(s): %s, round %d of %d" % (period, n, tool_name, k + 1, rounds))
                r = measure(env, monlines, tool_name, starter, n, tandem, workdir, seconds, latency=k == 0)
                r["period"] = period
                if r.get("roundtrip") is not None and base is not None:
                    r["added"] = r["roundtrip"] - base
                runs[tool_name].append(r)
        rows += [combine(runs[name]) for name, _ in tools]
    finally:
        for p in (gen, mon):
            if p:
                p.stop()
        server.stop()
    return rows


def fmt(v, f):
    return "–" if v is None or v != v else f % v


def ratio(a, b):
    return a / b if a is not None and b and a == a and b == b else None


def write_section(path, rows, args, rt, started, missing):
    L = [BEGIN, "", "## Racks: Tandem vs jalv and ecasound, hosting the same plugin", "",
         "Every tool hosts the SWH amplifier (`%s`, mono, gain %s dB) once, or as a chain of 8 and 32 instances: "
         "Tandem as one rack (`tandem rack`, and isolated: `tandem run` with `isolate = true`, the session plus the "
         "rack's child process), jalv as that many processes chained by JACK connections, ecasound as one process "
         "with that many `-elv2` operators, and the floor: `bench-client thru`, a bare JACK client that does the same "
         "multiplies and nothing else. One private dummy server per period and chain length (48 kHz, %s), a "
         "looping noise generator on the input, %g s measuring windows after 2 s of settling; %d round(s) per tool, "
         "the tools' order alternating between rounds; CPU and DSP are the medians over the rounds (every round's CPU "
         "in brackets), xruns the sum." % (
             URI, GAIN, "real-time scheduling (-R)" if rt else "no real-time scheduling (-r): not permitted here",
             args.seconds, args.rounds), "",
         "CPU s per audio s: on-CPU time of every process and thread of the tool (`/proc/PID/task/*/schedstat`) over "
         "the window. DSP: `jack_cpu_load()` (the whole server's cycle, so it includes the generator and monitor). "
         "Added latency: `jack_iodelay`'s round trip through the tool minus its round trip through a plain loop "
         "(frames). Private memory: `RssAnon` of all the tool's processes, summed. Xruns: every xrun of the server "
         "in the window, whoever caused it (on a small shared machine most are the machine's: compare the tools of "
         "one configuration, and jalv with one instance).", ""]
    if missing:
        L += ["Not measured: " + "; ".join(missing) + ".", ""]
    L += ["| period | instances | tool | CPU s / audio s | × jalv | DSP mean % | DSP max % | xruns | added latency "
          "(frames) | private MiB | processes |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    jalv = {(r["period"], r["n"]): r for r in rows if r["tool"] == "jalv" and "cpu" in r}
    for r in rows:
        if "error" in r:
            L.append("| %d | %d | %s | failed: %s | | | | | | | |" % (r["period"], r["n"], r["tool"], r["error"]))
            continue
        j = jalv.get((r["period"], r["n"]))
        L.append("| %d | %d | %s | %s | %s | %s | %s | %d | %s | %s | %d |" % (
            r["period"], r["n"], r["tool"], fmt(r["cpu"], "%.4f") + (
                " (%s)" % r["cpu_runs"].replace(",", ", ") if r.get("rounds", 1) > 1 else ""), fmt(ratio(r["cpu"], j and j["cpu"]), "%.2f"),
            fmt(r["dsp_mean"], "%.1f"), fmt(r["dsp_max"], "%.1f"), r["xruns"], fmt(None if r.get("added") is None else round(r["added"]) + 0, "%d"),
            fmt(r["mem_mib"], "%.1f"), r["processes"]))
    L += ["", "### Targets", ""]
    by = {(r["period"], r["n"], r["tool"]): r for r in rows if "cpu" in r}
    for (period, n, tool), r in sorted(by.items()):
        if tool != "tandem":
            continue
        j = by.get((period, n, "jalv"))
        iso = by.get((period, n, "tandem-iso"))
        checks = []
        fl = by.get((period, n, "floor"))
        if j:
            limit = 0.8 if n == 1 else 0.5
            q = ratio(r["cpu"], j["cpu"])
            checks.append("CPU %.2f× jalv (target ≤ %.1f×) %s" % (q, limit, "met" if q <= limit else "MISSED"))
            if fl:
                f = ratio(fl["cpu"], j["cpu"])
                checks.append("the floor (a bare client) %.4f CPU s/s, %.2f× jalv%s; Tandem %.2f× the floor" % (
                    fl["cpu"], f, ": the target is below it" if f > limit else "", ratio(r["cpu"], fl["cpu"])))
            if n > 1:
                below = r["dsp_mean"] < j["dsp_mean"]
                checks.append("DSP mean %.1f %% vs jalv %.1f %% %s" % (r["dsp_mean"], j["dsp_mean"],
                                                                      "met" if below else "MISSED"))
            if period == 64 and n == 32 and j["xruns"] == 0:
                checks.append("xruns %d (jalv 0) %s" % (r["xruns"], "met" if r["xruns"] == 0 else "MISSED"))
        if r.get("added") is not None:
            added = round(r["added"]) + 0
            checks.append("added latency %d frames %s" % (added, "met" if added == 0 else "MISSED"))
        if iso:
            checks.append(isolation_check(r, iso))
        L.append("- period %d, %d instance(s): %s." % (period, n, "; ".join(checks)))
    L += ["", "Reading the figures: a light plugin costs next to nothing to run (32 SWH amps are 32 × 64 multiplies "
          "a period). What a JACK host pays every period is the server waking its process thread (a futex round "
          "trip, tens of µs), plus its control thread. The floor row is that alone: a bare client "
          "(`bench-client thru`) whose callback multiplies its input by the same gain once per instance and "
          "whose main thread sleeps. With one instance jalv is at the floor or close to it, so a target of 0.8× "
          "jalv asks for less than a client that does nothing else costs on this machine; how far Tandem's rack "
          "is from the floor is in the targets above (× the floor): its callback's bookkeeping (cycle timer, "
          "counters, the chain's fade and mix checks) and a control thread that wakes once a second when idle "
          "(jalv's console sleeps on stdin). A chain is where one client wins: one wake-up per period for the "
          "whole chain against one per jalv process, and no server-side graph hops between them. Isolation adds "
          "a second process, but nothing per period: its graph-watching client runs no process callback, and its "
          "loop sleeps 2 s at a time (a turn costs 60–130 µs of a cold thread on this VM). A thread asleep on "
          "the heartbeat pipe wakes it when the rack's process ends, so a crash is seen at once; the child watches "
          "its own cycle counter for a hang and writes its count only every 2 s, for the supervisor's backstop. "
          "Before that design (a loop turning twice a second on each side, reading a beat each turn) isolation "
          "cost +0.0003–0.0004 CPU s/s, 10–15 % of a one-plugin rack. It is judged by the threads outside the "
          "process thread, where it runs: the process thread runs the same code in both and its rounds spread by "
          "±30 % on a busy host, more than the whole effect, as the paired rounds printed beside show."]
    command = " ".join(["scripts/bench_rack.py"] + (["--quick"] if args.quick else [])
                       + (["--rounds", str(args.rounds)] if args.rounds != (1 if args.quick else 3) else []))
    if args.from_log:
        when = "rendered from the log of a run, %s" % os.path.basename(args.from_log)
    else:
        when = "%s, %.0f s" % (started.strftime("%Y-%m-%d %H:%M UTC"),
                               (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds())
    L += ["", "Run: `%s` (%s)." % (command, when), "", END]
    splice(path, BEGIN, END, "\n".join(L) + "\n")


def isolation_check(inproc, iso):
    """Isolation's cost. What isolation adds runs outside the process thread (a second process's control loop and
    its heartbeat reader; the rack's own loop answering its supervisor): the threads not scheduled real-time, whose
    medians have little spread, judged against the target. The process thread runs the same code in both, so the
    whole processes' difference should be that plus noise: the median of the rounds' differences (round k of each,
    run next to each other) is printed beside it, with every round's, to show that noise."""
    a = [float(x) for x in str(inproc.get("cpu_runs", inproc["cpu"])).split(",")]
    b = [float(x) for x in str(iso.get("cpu_runs", iso["cpu"])).split(",")]
    pairs = [y - x for x, y in zip(a, b)]
    paired = statistics.median(pairs) if pairs else iso["cpu"] - inproc["cpu"]
    whole = "the whole processes %+.1f %% (%+.5f CPU s/s, the median of %d paired rounds: %s)" % (
        paired / inproc["cpu"] * 100, paired, len(pairs), ", ".join("%+.5f" % d for d in pairs))
    if "cpu_other" not in inproc or "cpu_other" not in iso:   # a log from before the split: the whole only
        cost = paired / inproc["cpu"] * 100
        return "isolation: %s; target ≤ 5 %% %s" % (whole, "met" if cost <= 5 else "MISSED")
    other = iso["cpu_other"] - inproc["cpu_other"]
    cost = other / inproc["cpu"] * 100
    return ("isolation adds %+.5f CPU s/s outside the process thread (%.5f against %.5f), %+.1f %% of the rack "
            "in process (target ≤ 5 %%) %s; %s" % (other, iso["cpu_other"], inproc["cpu_other"], cost,
                                                    "met" if cost <= 5 else "MISSED", whole))


def splice(path, begin, end, section):
    """Replaces the part of `path` between `begin` and `end` (markers included) with `section`, or appends it."""
    text = open(path).read() if os.path.exists(path) else "# Performance\n"
    if begin in text and end in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + section.rstrip("\n") + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


def parse_row(line):
    row = {}
    for part in line.split():
        k, _, v = part.partition("=")
        if v in ("True", "False"):
            row[k] = v == "True"
        elif v == "None":
            row[k] = None
        else:
            try:
                row[k] = int(v)
            except ValueError:
                try:
                    row[k] = float(v)
                except ValueError:
                    row[k] = v
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 s windows, period 64, 1 and 32 instances")
    ap.add_argument("--seconds", type=float, default=None, help="measuring window per tool (default 10, quick 3)")
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "release", "tandem"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "PERFORMANCE.md"))
    ap.add_argument("--tools", default="tandem,tandem-ladspa,tandem-iso,jalv,ecasound,floor")
    ap.add_argument("--rounds", type=int, default=None, help="measuring rounds per tool and configuration, the order "
                    "alternating; the table gives the medians (default 3, quick 1)")
    ap.add_argument("--counts", default=None, help="comma-separated chain lengths")
    ap.add_argument("--periods", default=None, help="comma-separated periods")
    ap.add_argument("--from-log", default=None, help="render the section from the key=value lines of an earlier run")
    args = ap.parse_args()
    args.seconds = args.seconds or (3.0 if args.quick else 10.0)
    args.rounds = max(1, args.rounds or (1 if args.quick else 3))
    counts = [int(x) for x in (args.counts or ("1,32" if args.quick else "1,8,32")).split(",")]
    periods = [int(x) for x in (args.periods or ("64" if args.quick else "64,256")).split(",")]
    started = datetime.datetime.now(datetime.timezone.utc)
    if args.from_log:
        rows = [parse_row(l) for l in open(args.from_log) if l.startswith("tool=")]
        rt = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
        write_section(args.out, rows, args, rt, started, [])
        return
    tandem = os.path.realpath(args.tandem)
    if not os.path.exists(tandem):
        sys.exit("no %s (make release)" % tandem)
    missing = []
    wanted = args.tools.split(",")
    tools = [(n, s) for n, s in STARTERS if n in wanted]
    for name, prog in (("jalv", "jalv"), ("ecasound", "ecasound")):
        if name in wanted and not shutil.which(prog):
            missing.append("%s (not installed; `apt-get install %s`)" % (name, prog))
            tools = [(n, s) for n, s in tools if n != name]
    workdir = tempfile.mkdtemp(prefix="tandem-rack-bench-")
    exe = B.helper(workdir)
    global EXE
    EXE = exe
    wav, raw = os.path.join(workdir, "noise.wav"), os.path.join(workdir, "noise.f32")
    B.noise(wav, raw, 1, 20)
    rt = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
    rows = []
    for period in periods:
        for n in counts:
            rows += configuration(period, n, tools, tandem, exe, raw, workdir, rt, args.seconds, args.rounds)
    for r in rows:
        print(" ".join("%s=%s" % (k, v) for k, v in r.items()), flush=True)
    write_section(args.out, rows, args, rt, started, missing)
    log("wrote %s (section %s); logs in %s" % (args.out, BEGIN, workdir))


if __name__ == "__main__":
    main()
