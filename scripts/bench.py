#!/usr/bin/env python3
"""Tandem's benchmark: Tandem side by side with jack_capture (recording) and sndfile-jackplay (playback).

Every configuration gets its own private dummy JACK server (real-time scheduling when the machine allows it), a
fixed signal generator or memory sink (bench/bench-client.c), and a monitor that counts xruns and samples the DSP
load. The tools of one configuration run back to back on the same server, so their figures share the machine's
conditions. The server's own messages are kept (with the time each arrived): the wide report says, stall by stall,
whom the server was waiting for at each steady xrun. Results go to docs/PERFORMANCE.md. Python standard library
only; needs gcc, libjack, jackd, sox.

    scripts/bench.py                      # the full matrix (about 35 minutes: 6 runs per tool and configuration),
                                          # then the wide part (about 27 minutes more)
    scripts/bench.py --quick              # 2 and 16 channels at period 256, 5 s each
    scripts/bench.py --wide               # only the wide part (128 ch at 64 and 256, 256 ch at 128, the floor and
                                          # the no-recorder control)

The report is spliced into docs/PERFORMANCE.md between this script's own markers (<!-- bench:begin/end --> for the
main part, <!-- wide:begin/end --> for the wide part); anything outside them (another generator's section) stays.
"""
import argparse, datetime, json, math, os, platform, re, shlex, signal, statistics, struct, subprocess, sys, tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
RATE = 48000


def log(msg):
    print("# " + msg, file=sys.stderr, flush=True)


class Proc:
    def __init__(self, argv, env, out=None, stdout=None):
        self.argv = argv
        self.out = out
        self.p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                  stdout=stdout if stdout else (open(out, "w") if out else subprocess.DEVNULL),
                                  stderr=subprocess.STDOUT, start_new_session=True, text=True)
        self.pid = self.p.pid
        self.start = time.monotonic()
        self.rusage = None
        self.code = None

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status, ru = os.wait4(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.rusage, self.code = ru, os.waitstatus_to_exitcode(status)
                self.end = time.monotonic()
                return self.code
            time.sleep(0.01)
        return None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.code is not None:
            return self.code
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass
        if self.wait(timeout) is None:
            os.killpg(self.pid, signal.SIGKILL)
            self.wait(5)
        return self.code


def proc_status(pid):
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "VmHWM"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
        fields = s[s.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError):
        return None


class Server:
    def __init__(self, name, period, channels, rt, workdir):
        import threading
        self.name = name
        self.env = dict(os.environ, JACK_DEFAULT_SERVER=name, JACK_NO_START_SERVER="1", JACK_NO_AUDIO_RESERVATION="1")
        self.log = os.path.join(workdir, "jackd-%s.log" % name)
        # The server's own messages, each with the monotonic time it was read: its xrun reports name the clients it
        # was waiting for (`server_account`).
        self.lines = []
        # -p: port limit (the default 256 is too few for a 256-channel generator and a tool beside it).
        self.proc = Proc(["jackd", "-n", name, "-R" if rt else "-r", "-p", str(PORT_MAX), "-d", "dummy", "-r", str(RATE), "-p", str(period),
                          "-C", "2", "-P", "2"], self.env, stdout=subprocess.PIPE)

        def read():
            with open(self.log, "w") as f:
                for line in self.proc.p.stdout:
                    t = time.monotonic()
                    self.lines.append((t, line.rstrip("\n")))
                    f.write("%.6f %s" % (t, line))
                    f.flush()
        threading.Thread(target=read, daemon=True).start()
        for _ in range(200):
            if subprocess.run(["jack_lsp"], env=self.env, capture_output=True).returncode == 0:
                return
            time.sleep(0.05)
        raise RuntimeError("jackd %s did not start" % name)

    def stop(self):
        self.proc.stop(signal.SIGTERM)


class LineCollector:
    """Reads a bench-client's stdout in the background."""
    def __init__(self, proc):
        import threading
        self.lines = []
        self.ready = threading.Event()
        def run():
            for line in proc.p.stdout:
                self.lines.append(line.split())
                if line.startswith("READY"):
                    self.ready.set()
        threading.Thread(target=run, daemon=True).start()


def helper(workdir):
    exe = os.path.join(workdir, "bench-client")
    subprocess.run(["gcc", "-O2", "-Wall", "-o", exe, os.path.join(ROOT, "bench", "bench-client.c"), "-ljack"], check=True)
    return exe


def noise(path_wav, path_raw, channels, seconds):
    if not os.path.exists(path_wav):
        subprocess.run(["sox", "-R", "-D", "-n", "-r", str(RATE), "-c", str(channels), "-b", "24", "-e", "signed-integer",
                        path_wav, "synth", str(seconds)] + ["whitenoise"] * channels + ["vol", "0.5"], check=True)
    if path_raw and not os.path.exists(path_raw):
        to_raw(path_wav, path_raw)


def to_raw(path, raw):
    subprocess.run(["sox", "-V1", "-D", path, "-t", "raw", "-e", "floating-point", "-b", "32", "-L", raw], check=True)


def read_frames(raw, channels):
    with open(raw, "rb") as f:
        data = f.read()
    n = len(data) // (4 * channels)
    return data, n


def compare(source_raw, recorded_raw, channels, cyclic):
    """Bit-exact check: align on the recording's first non-silent frame, then every frame must follow the source in
    order (cyclically for a looping source). Returns (bitexact, matched, discontinuities, extra, losses): losses lists
    where each run of mismatching frames began, as (recording frame, source frame it should have been)."""
    src, ns = read_frames(source_raw, channels)
    rec, nr = read_frames(recorded_raw, channels)
    fs = 4 * channels
    zero = bytes(fs)
    first = next((i for i in range(nr) if rec[i * fs:(i + 1) * fs] != zero), None)
    if first is None or ns == 0:
        return False, 0, 0, 0, []
    last = max(i for i in range(nr - 1, -1, -1) if rec[i * fs:(i + 1) * fs] != zero or i == first) if not cyclic else nr - 1
    # Where a frame of the source is, by its first bytes (noise: unique), checked whole.
    key = min(fs, 16)
    index = {}
    for j in range(ns - 1, -1, -1):
        index[src[j * fs:j * fs + key]] = j

    def locate(frame):
        # A frame whose first channels are a source frame's and whose others are not is torn (ports connected one
        # by one while it played): found nowhere, like a frame the index does not know.
        j = index.get(frame[:key])
        return j if j is not None and src[j * fs:(j + 1) * fs] == frame else None

    k = locate(rec[first * fs:(first + 1) * fs])
    if k is None:
        return False, 0, 1, 0, [(first, None)]
    matched = disc = extra = 0
    losses = []
    i = first
    ok = True
    while i <= last:
        if not cyclic and k >= ns:
            extra = sum(1 for j in range(i, nr) if rec[j * fs:(j + 1) * fs] != zero)
            break
        if rec[i * fs:(i + 1) * fs] == src[k * fs:(k + 1) * fs]:
            matched += 1
            ok = True
        else:
            if ok:
                losses.append((i, k))
            ok = False
            disc += 1
            p = locate(rec[i * fs:(i + 1) * fs])
            if p is not None:
                k = p
        i += 1
        k = (k + 1) % ns if cyclic else k + 1
    if not cyclic and k < ns:
        losses.append((None, k))            # the file's end never arrived
    return disc == 0 and extra == 0 and matched > 0, matched, disc, extra, losses


def skips(lines, t0=None, t1=None):
    """A measuring client's own irregular cycles ("SKIP t pos jump" lines), optionally within a time window."""
    return [int(l[2]) for l in lines if l and l[0] == "SKIP" and (t0 is None or t0 <= float(l[1]) <= t1)]


def attribute(r, losses, harness, period, cyclic_frames=None):
    """Splits a run's losses into the tool's and the harness's. A loss that began within two periods of a cycle the
    generator or sink itself missed (or ran late) is the measuring client's: any tool would have lost there. Positions
    are the sink's frames (playback) or the looping source's (recording, cyclic); None (no place: the source was not
    found, or the file's end never arrived) is always the tool's."""
    def near(a, b):
        d = abs(a - b)
        if cyclic_frames:
            d = min(d, cyclic_frames - d)
        return d <= 2 * period
    theirs = [x for x in losses if x is not None and any(near(x, h) for h in harness)]
    r["harness_losses"] = len(theirs)
    r["tool_losses"] = len(losses) - len(theirs)
    r["harness_skips"] = len(harness)


def settle():
    """Flush dirty pages and let the machine calm down, so no tool pays for another's writeback."""
    os.sync()
    time.sleep(1.5)


XRUN_LINE = re.compile(r"JackEngine::XRun: client = (\S+) was not finished, state = (\w+)")
LATE_FINISH = re.compile(r"JackEngine::XRun: client (\S+) finished after current callback")
TIMER_LATE = re.compile(r"JackTimedDriver::Process XRun = (\d+) usec")


def server_account(lines):
    """jackd's own account of the xruns among `lines` ((time read, text) pairs): one event per stall. At an xrun
    JACK2's engine names every client that had not finished the cycle, with its state (`Triggered`: signalled but
    not yet in its callback, waiting for an input or for a CPU; `Running`: in its callback; `Late`: finished, but
    after the next cycle began), then the driver reports a "Process error". The dummy driver says when its own timer
    woke too late; such a line just before an engine report belongs to that event (the server then runs the cycles it
    missed back to back, and a client caught in one of them is named `Running`), and alone it is an event of its own.
    Each event: {"clients": {name: state}, "timer_us": int or None}."""
    events, cur, timer = [], {}, None

    def lone(timer):
        events.append(dict(clients={}, timer_us=timer[1]))
    for t, line in lines:
        m, late = XRUN_LINE.search(line), LATE_FINISH.search(line)
        if m or late:
            if m:
                cur[m.group(1)] = m.group(2)
            else:
                cur.setdefault(late.group(1), "Late")
        elif "Process error" in line:
            if cur:
                attach = timer is not None and t - timer[0] <= 0.002
                if timer is not None and not attach:
                    lone(timer)
                events.append(dict(clients=cur, timer_us=timer[1] if attach else None))
                timer = None
            cur = {}
        else:
            m = TIMER_LATE.search(line)
            if m:
                if timer is not None:
                    lone(timer)
                timer = (t, int(m.group(1)))
    if cur:
        events.append(dict(clients=cur, timer_us=timer[1] if timer else None))
    elif timer is not None:
        lone(timer)
    return events


def run_tool(argv, env, seconds_audio, mon, workdir, label, timeout, sigint_after=None, server=None):
    settle()
    out = os.path.join(workdir, label + ".log")
    t0 = time.monotonic()
    p = Proc(argv, env, out=out)
    peak_anon = 0
    t_ticks0 = None
    steady_start = None
    while p.wait(0.05) is None:
        st = proc_status(p.pid)
        peak_anon = max(peak_anon, st.get("RssAnon", 0))
        if steady_start is None and time.monotonic() - t0 >= 1.0:
            t_ticks0, steady_start = cpu_ticks(p.pid), time.monotonic()
        if sigint_after and time.monotonic() - t0 >= sigint_after:
            os.kill(p.pid, signal.SIGINT)
            sigint_after = None
        if time.monotonic() - t0 > timeout:
            p.stop(signal.SIGKILL)
            break
    account = None
    if server:
        time.sleep(0.05)                    # the reader thread's last lines
        account = server_account([x for x in list(server.lines) if t0 + 1.0 <= x[0] <= p.end + 0.01])
    ru = p.rusage
    cpu = (ru.ru_utime + ru.ru_stime) if ru else float("nan")
    steady = float("nan")
    # steady CPU: the last sample before exit is not available after reaping; use total minus the first second.
    if t_ticks0 is not None and ru:
        steady = ((ru.ru_utime + ru.ru_stime) - t_ticks0 / os.sysconf("SC_CLK_TCK")) / max(1e-6, p.end - steady_start) * 100
    with open(out) as f:
        text = f.read()
    xr = [float(l[1]) for l in mon.lines if l and l[0] == "XRUN" and t0 + 1.0 <= float(l[1]) <= p.end]
    loads = [float(l[2]) for l in mon.lines if l and l[0] == "LOAD" and t0 + 1.0 <= float(l[1]) <= p.end]
    return dict(code=p.code, cpu_s=cpu, cpu_per_audio_s=cpu / seconds_audio, cpu_steady_pct=steady,
                rss_anon_kb=peak_anon, xruns_steady=len(xr),
                dsp_mean=(sum(loads) / len(loads)) if loads else float("nan"), dsp_max=max(loads) if loads else float("nan"),
                text=text, started=t0, ended=p.end, server=account)


def cycle_cost(text):
    """Tandem's cycle cost (its summary line), or the floor's ("CYCLE p50 p99 max count" from bench-client)."""
    m = (re.search(r"cycle cost: p50 ([\d.]+) µs, p99 ([\d.]+) µs, max ([\d.]+) µs over (\d+) cycles", text)
         or re.search(r"^CYCLE ([\d.]+) ([\d.]+) ([\d.]+) (\d+)$", text, re.M))
    return (float(m.group(1)), float(m.group(2)), float(m.group(3))) if m else None


def measure_record(cfg, exe, workdir, rt, seconds, idx):
    ch, period = cfg
    name = "tbench-%d-%d" % (os.getpid(), idx)
    wav = os.path.join(workdir, "noise-%d.wav" % ch)
    raw = os.path.join(workdir, "noise-%d.f32" % ch)
    noise(wav, raw, ch, seconds + 4)
    rows = []
    server = Server(name, period, ch, rt, workdir)
    try:
        mon_p = Proc([exe, "mon", "bench-mon"], server.env, stdout=subprocess.PIPE)
        mon = LineCollector(mon_p)
        gen_p = Proc([exe, "gen", "bench-gen", str(ch), raw], server.env, stdout=subprocess.PIPE)
        gen = LineCollector(gen_p)
        gen.ready.wait(10)
        mon.ready.wait(10)
        time.sleep(1.5)
        ports = ["bench-gen:out_%d" % (c + 1) for c in range(ch)]
        tools = [
            ("tandem", ["tandem-placeholder"]),
            # jack_capture refuses more than about 200 arguments ("Too many arguments"): wide runs name the ports by
            # one pattern (matched in registration order, out_1 first).
            ("jack_capture", ["jack_capture", "-d", str(seconds), "-c", str(ch), "-b", "32", "-f", "wav", "-dc", "-ns"]
             + (sum([["--port", p] for p in ports], []) if ch <= 128 else ["--port", "bench-gen:out_*"])),
        ]
        if LOUDNESS:
            # The same recorder measuring EBU R128 loudness of every stereo pair (docs/LOUDNESS.md): its cost is the
            # difference between the two tandem rows.
            tools.insert(1, ("tandem+loudness", ["tandem-placeholder"]))
        if FLOOR:
            tools.append(("floor", [exe, "floor", "bench-floor", str(ch), str(seconds), "bench-gen"]))
            # The control: the same window with no recorder at all (the server, the generator and the monitor only):
            # the xruns the graph has without any client that copies.
            tools.append(("none", ["sleep", str(seconds)]))
        runs = {}
        for round_ in range(REPEAT):
          # Alternate who goes first, so order effects show up instead of hiding.
          for tool, argv in (tools if (idx // 2 + round_) % 2 == 0 else list(reversed(tools))):
              out = os.path.join(workdir, "rec-%s-%d-%d.wav" % (tool, ch, period))
              if os.path.exists(out):
                  os.unlink(out)
              if tool.startswith("tandem"):
                  d = os.path.join(workdir, "tandem-%d-%d" % (ch, period))
                  os.makedirs(d, exist_ok=True)
                  for f in os.listdir(d):
                      os.unlink(os.path.join(d, f))
                  argv = [TANDEM, "record", "-q", "-c", str(ch), "--connect", "bench-gen:out_.*", "-d", d,
                          "--session", "bench", "--template", "take", "-t", str(seconds)] \
                      + (["--loudness"] if tool == "tandem+loudness" else [])
                  r = run_tool(argv, server.env, seconds, mon, workdir, "tandem-rec-%d-%d" % (ch, period), seconds + 30,
                               server=server)
                  out = os.path.join(d, "take.wav")
                  try:
                      with open(os.path.join(d, "take.json")) as f:
                          r["missed"] = json.load(f).get("missedFrames") or 0
                  except (OSError, ValueError):
                      pass
              elif tool in NO_FILE:
                  r = run_tool(argv, server.env, seconds, mon, workdir, "%s-%d-%d" % (tool, ch, period), seconds + 30,
                               server=server)
              else:
                  r = run_tool(argv + [out], server.env, seconds, mon, workdir, "jc-%d-%d" % (ch, period), seconds + 30,
                               server=server)
              r.update(tool=tool, role="record", channels=ch, period=period, cmd=" ".join(shlex.quote(a) for a in
                       (argv if tool != "jack_capture" else argv + ["OUT.wav"])).replace(exe, "bench-client"))
              frames = None
              if os.path.exists(out):
                  fr = subprocess.run(["sox", "--i", "-s", out], capture_output=True, text=True).stdout.strip()
                  frames = int(fr) if fr.isdigit() else None
                  recraw = out + ".f32"
                  to_raw(out, recraw)
                  be, matched, disc, extra, losses = compare(raw, recraw, ch, cyclic=True)
                  os.unlink(recraw)
                  os.unlink(out)            # no tool pays for another's files in the page cache
                  r.update(bitexact=be, matched=matched, disc=disc, extra=extra)
                  attribute(r, [k for _, k in losses], skips(gen.lines, r["started"], r["ended"]), period,
                            cyclic_frames=os.path.getsize(raw) // (4 * ch))
              r.update(frames_expected=seconds * RATE, frames_written=frames)
              r["cycle"] = cycle_cost(r["text"]) if tool in ("tandem", "tandem+loudness", "floor") else None
              runs.setdefault(tool, []).append(r)
              log("record %s ch=%d p=%d cpu/s=%.4f xruns=%d dsp max %.1f bitexact=%s frames=%s cycle=%s losses: own %s, "
                  "generator's %s" % (tool, ch, period, r["cpu_per_audio_s"], r["xruns_steady"], r["dsp_max"],
                                      r.get("bitexact"), frames, r["cycle"], r.get("tool_losses"), r.get("harness_losses")))
              time.sleep(1.0)
        rows += [median_row(v) for v in runs.values()]
        gen_p.stop()
        mon_p.stop()
    finally:
        server.stop()
    return rows


def median_row(runs):
    """The run with the median CPU, carrying every run's CPU, xruns and bit-exactness; CPU is the median of all runs
    (the mean of the middle two for an even count, not the upper one)."""
    ordered = sorted(runs, key=lambda r: r["cpu_per_audio_s"])
    row = dict(ordered[len(ordered) // 2])
    row["cpu_per_audio_s"] = statistics.median(r["cpu_per_audio_s"] for r in runs)
    row["cpu_runs"] = [r["cpu_per_audio_s"] for r in runs]
    row["xruns_runs"] = [r["xruns_steady"] for r in runs]
    row["bitexact"] = all(r.get("bitexact") for r in runs)
    row["bitexact_runs"] = sum(1 for r in runs if r.get("bitexact"))
    row["exact_runs"] = [bool(r.get("bitexact")) for r in runs]
    # Every frame delivered in order, stray frames after the end aside (how sndfile-jackplay is judged).
    row["complete_runs"] = [r.get("matched") == r.get("frames_expected") and not r.get("disc") for r in runs]
    # The tool lost nothing itself: exact (complete), or every loss at a cycle the generator or sink missed.
    row["strict_runs"] = row["exact_runs"] if row["role"] == "record" else row["complete_runs"]
    row["own_runs"] = [e or bool(r.get("matched") and "tool_losses" in r and not r["tool_losses"]
                                 and (row["role"] == "play" or not r.get("extra")))
                       for e, r in zip(row["strict_runs"], runs)]
    row["harness_losses"] = sum(int(r.get("harness_losses") or 0) for r in runs)
    row["disc"] = max(int(r.get("disc") or 0) for r in runs)
    row["extra"] = max(int(r.get("extra") or 0) for r in runs)
    row["missed"] = sum(int(r.get("missed") or 0) for r in runs)
    row["cycle_max_runs"] = [r["cycle"][2] if r.get("cycle") else None for r in runs]
    row["server_runs"] = [r.get("server") for r in runs]
    return row


def measure_play(cfg, exe, workdir, rt, seconds, idx):
    ch, period = cfg
    name = "tbench-%d-%d" % (os.getpid(), idx)
    wav = os.path.join(workdir, "play-%d-%d.wav" % (ch, seconds))
    raw = os.path.join(workdir, "play-%d-%d.f32" % (ch, seconds))
    noise(wav, raw, ch, seconds)
    rows = []
    server = Server(name, period, ch, rt, workdir)
    try:
        mon_p = Proc([exe, "mon", "bench-mon"], server.env, stdout=subprocess.PIPE)
        mon = LineCollector(mon_p)
        mon.ready.wait(10)
        runs = {}
        for round_ in range(REPEAT):
          order = ("tandem", "sndfile-jackplay") if (idx // 2 + round_) % 2 == 0 else ("sndfile-jackplay", "tandem")
          for tool in order:
              sink_raw = os.path.join(workdir, "sink-%s-%d-%d.f32" % (tool, ch, period))
              sink_p = Proc([exe, "sink", "bench-sink", str(ch), str(seconds + 20), sink_raw], server.env, stdout=subprocess.PIPE)
              sink = LineCollector(sink_p)
              sink.ready.wait(10)
              time.sleep(1.0)
              if tool == "tandem":
                  argv = [TANDEM, "play", "-q", "--connect", "bench-sink:in_.*", wav]
              else:
                  argv = ["sndfile-jackplay", "--autoconnect=bench-sink:in_%d", wav]
              r = run_tool(argv, server.env, seconds, mon, workdir, "%s-play-%d-%d" % (tool, ch, period), seconds + 30,
                           server=server)
              time.sleep(0.5)
              sink_p.stop()
              be, matched, disc, extra, losses = compare(raw, sink_raw, ch, cyclic=False)
              r.update(tool=tool, role="play", channels=ch, period=period, bitexact=be, matched=matched, disc=disc,
                       extra=extra, frames_expected=seconds * RATE, frames_written=matched,
                       cmd=" ".join(shlex.quote(a) for a in argv).replace(wav, "IN.wav"))
              attribute(r, [i for i, _ in losses], skips(sink.lines), period)
              r["cycle"] = cycle_cost(r["text"]) if tool == "tandem" else None
              m = re.search(r"(-?\d+) frames of skipped cycles", r["text"]) if tool == "tandem" else None
              r["missed"] = int(m.group(1)) if m else 0
              os.unlink(sink_raw)
              runs.setdefault(tool, []).append(r)
              log("play %s ch=%d p=%d cpu/s=%.4f xruns=%d bitexact=%s matched=%d extra=%d losses: own %d, sink's %d "
                  "(sink skips %d, player's skipped frames %s)" % (
                      tool, ch, period, r["cpu_per_audio_s"], r["xruns_steady"], be, matched, extra, r["tool_losses"],
                      r["harness_losses"], r["harness_skips"], r["missed"] if tool == "tandem" else "?"))
              time.sleep(1.0)
        rows += [median_row(v) for v in runs.values()]
        mon_p.stop()
    finally:
        server.stop()
    return rows


def startup(exe, workdir, rt):
    name = "tbench-%d-start" % os.getpid()
    server = Server(name, 256, 2, rt, workdir)
    times = []
    try:
        mon_p = Proc([exe, "mon", "bench-mon"], server.env, stdout=subprocess.PIPE)
        mon = LineCollector(mon_p)
        mon.ready.wait(10)
        d = tempfile.mkdtemp(prefix="tbench-start-")
        for i in range(5):
            mon.lines.clear()
            t0 = time.monotonic()
            p = Proc([TANDEM, "record", "-q", "-c", "16", "--client", "start%d" % i, "-d", d], server.env)
            while time.monotonic() - t0 < 10:
                ports = [l for l in mon.lines if l and l[0] == "PORT" and l[2].startswith("start%d:" % i)]
                if len(ports) == 16:
                    times.append(max(float(l[1]) for l in ports) - t0)
                    break
                time.sleep(0.005)
            p.stop(signal.SIGINT)
        mon_p.stop()
    finally:
        server.stop()
    return times


def combined(exe, workdir, rt, seconds):
    """32 channels recorded and 32 played at once, period 64."""
    name = "tbench-%d-combined" % os.getpid()
    ch = 32
    wav = os.path.join(workdir, "noise-%d.wav" % ch)
    raw = os.path.join(workdir, "noise-%d.f32" % ch)
    noise(wav, raw, ch, 8)
    server = Server(name, 64, ch, rt, workdir)
    d = tempfile.mkdtemp(prefix="tbench-combined-")
    preset = os.path.join(d, "combined.toml")
    with open(preset, "w") as f:
        f.write('[session]\nname = "combined"\ndirectory = "%s"\n[recorder]\nchannels = 32\nduration = %d\n'
                '[player]\nchannels = 32\nqueue = ["%s"]\nloop = "item"\n'
                '[[connect]]\nfrom = "bench-gen:out_*"\nto = "tandem-rec:in_*"\n'
                '[[connect]]\nfrom = "tandem-play:out_*"\nto = "bench-sink:in_*"\n' % (d, seconds, wav))
    try:
        mon_p = Proc([exe, "mon", "bench-mon"], server.env, stdout=subprocess.PIPE)
        mon = LineCollector(mon_p)
        gen_p = Proc([exe, "gen", "bench-gen", str(ch), raw], server.env, stdout=subprocess.PIPE)
        sink_p = Proc([exe, "sink", "bench-sink", str(ch), "2", os.path.join(d, "sink.f32")], server.env, stdout=subprocess.PIPE)
        LineCollector(gen_p).ready.wait(10)
        LineCollector(sink_p).ready.wait(10)
        mon.ready.wait(10)
        time.sleep(1)
        r = run_tool([TANDEM, "run", "-q", preset], server.env, seconds, mon, workdir, "combined", seconds + 60)
        gen_p.stop(); sink_p.stop(); mon_p.stop()
    finally:
        server.stop()
    m = re.search(r"dropped (\d+), missed (\d+), xruns (\d+)", r["text"])
    r.update(dropped=int(m.group(1)) if m else None, missed=int(m.group(2)) if m else None, tool="tandem run", role="record 32 + play 32", channels=32, period=64)
    return r


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    jack = subprocess.run(["jackd", "--version"], capture_output=True, text=True).stdout.splitlines()[0:1]
    return "%s, %d cores, %s %s, %s" % (model, os.cpu_count(), platform.system(), platform.release(),
                                        jack[0] if jack else "jackd ?")


def fmt(v, f="%.4f"):
    return "NA" if v is None or v != v else f % v


def xruns(r):
    return ", ".join(str(x) for x in r.get("xruns_runs", [r["xruns_steady"]]))


def exact(r):
    n = len(r.get("xruns_runs", [0]))
    if r["tool"] in NO_FILE:
        return "n/a"
    if r.get("bitexact"):
        return "yes (%d/%d)" % (n, n)
    missed = ("; the server skipped %d frames of its cycles, %s" % (
        r["missed"], "listed in the reports" if r["role"] == "record" else "counted in its summaries")) if r.get("missed") else ""
    harness = ("; %d loss(es) where the %s itself missed a cycle" % (
        r["harness_losses"], "generator" if r["role"] == "record" else "sink")) if r.get("harness_losses") else ""
    return "%d/%d (disc %s, extra %s%s%s)" % (r.get("bitexact_runs", 0), n, r.get("disc"), r.get("extra"), missed, harness)


RECORD_RING_S, PLAY_RING_S = 4, 2
PORT_MAX = 2048
WIDE = [(128, 64), (128, 256), (256, 128)]      # Tandem's default ring seconds (recorder, player)
ANCHOR = {"record": "jack_capture", "play": "sndfile-jackplay"}
# The wide part's rows that write no file (the floor copies into memory; the control records nothing): what their
# frames column says instead.
NO_FILE = {"floor": "(memory only)", "none": "(no recorder)"}


def tool_table(by, role):
    """One comparison table: per configuration, Tandem's row (with its CPU ratio) and the anchor's."""
    play = role == "play"
    L = ["| ch | period | tool | CPU s / audio s | ratio | steady CPU % | private MiB | xruns | DSP mean / max % | "
         + ("frames expected / matched | extra frames after the end" if play else "frames expected / written")
         + " | bit-exact | cycle p50 / p99 / max µs | p99 % of period |",
         "|---" * (14 if play else 13) + "|"]
    for key in sorted(k for k in by if k[0] == role):
        _, ch, period = key
        t = by[key].get("tandem"); a = by[key].get(ANCHOR[role])
        for r in (t, a, by[key].get("floor"), by[key].get("none")):
            if not r:
                continue
            ratio = (t["cpu_per_audio_s"] / a["cpu_per_audio_s"]) if (r is t and a and a["cpu_per_audio_s"] > 0) else None
            cyc = r.get("cycle")
            frames = ("%s / %s | %s" % (r["frames_expected"], r["matched"], r["extra"]) if play
                      else NO_FILE.get(r["tool"]) or "%s / %s" % (r["frames_expected"], r["frames_written"]))
            L.append("| %d | %d | %s | %s | %s | %s | %.1f | %s | %s / %s | %s | %s | %s | %s |" % (
                ch, period, "none (no recorder)" if r["tool"] == "none" else r["tool"], fmt(r["cpu_per_audio_s"]),
                fmt(ratio, "%.2f×") if ratio else "",
                fmt(r["cpu_steady_pct"], "%.2f"), r["rss_anon_kb"] / 1024, xruns(r), fmt(r["dsp_mean"], "%.1f"),
                fmt(r["dsp_max"], "%.1f"), frames, exact(r),
                "%.1f / %.1f / %.1f" % tuple(cyc) if cyc else "", ("%.2f" % (cyc[1] / (period / RATE * 1e6) * 100)) if cyc else ""))
    return L


def targets(by):
    """The issue's targets, each judged from the rows above."""
    def pairs(role):
        for key in sorted(k for k in by if k[0] == role):
            t, a = by[key].get("tandem"), by[key].get(ANCHOR[role])
            if t and a:
                yield key[1], key[2], t, a

    def cpu(role, limit):
        ratios = [(t["cpu_per_audio_s"] / a["cpu_per_audio_s"], ch, p) for ch, p, t, a in pairs(role)
                  if a["cpu_per_audio_s"] > 0]
        if not ratios:
            return "not measured"
        worst = max(ratios)
        met = sum(1 for r, _, _ in ratios if r <= limit)
        return "%s: within it at %d of %d configurations (highest %.2f× at %d ch / %d)" % (
            "met" if met == len(ratios) else "**missed**", met, len(ratios), worst[0], worst[1], worst[2])

    def exactness():
        """Judged on what each tool lost itself: a loss that began where the generator or sink missed a cycle of its
        own is the harness's, for either tool. The strict verdict (every run exact) is given beside it."""
        parts, strict_parts, judged, strict_judged, pooled = [], [], 0, 0, []
        for role, anchor in ANCHOR.items():
            lost_t = lost_a = runs_t = runs_a = 0
            for ch, p, t, a in pairs(role):
                # The per-configuration verdict turns on single runs where the machine delayed one client; the loss
                # rate over all configurations is the steadier comparison, so it is given beside it.
                lost_t += len(t["own_runs"]) - sum(t["own_runs"])
                lost_a += len(a["own_runs"]) - sum(a["own_runs"])
                runs_t += len(t["own_runs"])
                runs_a += len(a["own_runs"])
                a_strict = a["strict_runs"]
                t_strict = t["exact_runs"]
                clean_t = [e for e, x in zip(t_strict, t["xruns_runs"]) if x == 0]
                if all(a["own_runs"]):
                    judged += 1
                    if not all(t["own_runs"]):
                        parts.append("%s %d/%d: Tandem %d/%d where %s was %d/%d" % (
                            role, ch, p, sum(t["own_runs"]), len(t["own_runs"]), anchor, sum(a["own_runs"]),
                            len(a["own_runs"])))
                if all(a_strict):
                    strict_judged += 1
                    if not all(t_strict):
                        strict_parts.append("%s %d/%d: Tandem %d/%d where %s was %d/%d (Tandem's runs without server "
                                            "xruns: %d of %d exact)" % (role, ch, p, sum(t_strict), len(t_strict), anchor,
                                                                        sum(a_strict), len(a_strict), sum(clean_t),
                                                                        len(clean_t)))
            pooled.append("%s: Tandem %d of %d, %s %d of %d" % (role, lost_t, runs_t, anchor, lost_a, runs_a))
        own = ("met at all %d configurations where the anchor lost nothing itself in every run" % judged if not parts
               else "**missed**: " + "; ".join(parts))
        strict = ("met at all %d configurations where the anchor was exact in every run" % strict_judged
                  if not strict_parts else "missed: " + "; ".join(strict_parts))
        return (own + ". Strictly, counting the losses at the harness's own missed cycles too: " + strict
                + ". Runs with a loss of the tool's own over all configurations: " + "; ".join(pooled))

    def stray():
        rows = [(ch, p, t, a) for ch, p, t, a in pairs("play") if a.get("extra")]
        bad = [(ch, p) for ch, p, t, _ in rows if t.get("extra")]
        return ("met: sndfile-jackplay appended stray frames at %d configurations, Tandem at none" % len(rows)
                if not bad else "**missed** at %s" % ", ".join("%d/%d" % b for b in bad))

    def xruns_64():
        key = ("record", 64, 64)
        t, a = by.get(key, {}).get("tandem"), by.get(key, {}).get("jack_capture")
        if not (t and a):
            return "not measured"
        rounds = list(zip(t["xruns_runs"], a["xruns_runs"]))
        judged = [(x, y) for x, y in rounds if y == 0]
        if not judged:
            return "not exercised: jack_capture had xruns in every round (%s; Tandem's in the same rounds: %s)" % (
                ", ".join(str(y) for _, y in rounds), ", ".join(str(x) for x, _ in rounds))
        bad = [x for x, _ in judged if x]
        return "%s in %d round(s) where jack_capture had 0 (Tandem's xruns there: %s)" % (
            "met" if not bad else "**missed**", len(judged), ", ".join(str(x) for x, _ in judged))

    def p99():
        vals = []
        for key in sorted(k for k in by if k[1] == 64):
            t = by[key].get("tandem")
            if t and t.get("cycle"):
                vals.append((t["cycle"][1] / (key[2] / RATE * 1e6) * 100, key[0], key[2]))
        if not vals:
            return "not measured"
        worst = max(vals)
        return "%s: highest %.2f %% (%s, period %d)" % ("met" if worst[0] < 5 else "**missed**", *worst)

    def memory(role, ring):
        parts, ok = [], True
        for ch, p, t, a in pairs(role):
            if ch != 64:
                continue
            allowance = ring * ch * RATE * 4 / 2**20
            mine, theirs = t["rss_anon_kb"] / 1024, a["rss_anon_kb"] / 1024
            ok = ok and mine <= theirs + allowance
            parts.append("period %d: %.1f %s %.1f + %.1f MiB ring" % (p, mine, "≤" if mine <= theirs + allowance else ">",
                                                                    theirs, allowance))
        return ((("met" if ok else "**missed**") + " (" + "; ".join(parts) + ")") if parts else "not measured")

    L = ["\n## Targets\n", "Judged by the script from the tables above.\n", "| target | result |", "|---|---|"]
    L.append("| recording CPU at most 1.0× jack_capture's | %s |" % cpu("record", 1.0))
    L.append("| recording CPU aim: 0.8× | %s |" % cpu("record", 0.8))
    L.append("| playback CPU at most 1.0× sndfile-jackplay's | %s |" % cpu("play", 1.0))
    L.append("| bit-exact in every configuration where the anchor is | %s |" % exactness())
    L.append("| no stray frames where sndfile-jackplay appends them | %s |" % stray())
    L.append("| 0 xruns at 64 ch / 64 frames where jack_capture has 0 in the same round | %s |" % xruns_64())
    L.append("| process-cycle p99 below 5 %% of the period at 64 channels | %s |" % p99())
    L.append("| recording: private memory at 64 ch at most jack_capture's plus the ring (%d s) | %s |"
             % (RECORD_RING_S, memory("record", RECORD_RING_S)))
    L.append("| (not a target) playback: private memory at 64 ch against sndfile-jackplay's plus the ring (%d s) | %s |"
             % (PLAY_RING_S, memory("play", PLAY_RING_S)))
    return L


def splice(path, marker, lines):
    """Puts `lines` between <!-- marker:begin --> and <!-- marker:end --> in the file at `path`, leaving everything
    outside the markers as it is (appended at the end when the markers are not there yet)."""
    begin, end = "<!-- %s:begin -->" % marker, "<!-- %s:end -->" % marker
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        text = ""
    block = begin + "\n" + "\n".join(lines) + "\n" + end
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def wide_targets(by):
    """Issue 23's acceptance, judged from the wide rows."""
    def get(role, ch, p):
        d = by.get((role, ch, p), {})
        return d.get("tandem"), d.get(ANCHOR[role])
    L = ["| target | result |", "|---|---|"]
    t, a = get("record", 128, 64)
    if t and a:
        rounds = list(zip(t["xruns_runs"], a["xruns_runs"]))
        L.append("| 128 ch / 64: steady xruns at most jack_capture's (sums over %d rounds) | %s: Tandem %d, jack_capture %d "
                 "(per round: %s) |" % (len(rounds), "met" if sum(t["xruns_runs"]) <= sum(a["xruns_runs"]) else "**missed**",
                                        sum(t["xruns_runs"]), sum(a["xruns_runs"]),
                                        "; ".join("%d vs %d" % x for x in rounds)))
        L.append("| 128 ch / 64: bit-exact wherever jack_capture is | %s: Tandem %d/%d exact, jack_capture %d/%d |" % (
            "met" if sum(t["exact_runs"]) >= sum(a["exact_runs"]) else "**missed**", sum(t["exact_runs"]),
            len(t["exact_runs"]), sum(a["exact_runs"]), len(a["exact_runs"])))
        L.append("| 128 ch / 64: DSP max within 5 points of jack_capture's | %s: %.1f vs %.1f (median runs) |" % (
            "met" if t["dsp_max"] <= a["dsp_max"] + 5 else "**missed**", t["dsp_max"], a["dsp_max"]))
    for ch, p in WIDE:
        t, a = get("record", ch, p)
        if t and a and a["cpu_per_audio_s"] > 0:
            ratio = t["cpu_per_audio_s"] / a["cpu_per_audio_s"]
            L.append("| %d ch / %d: recording CPU at most 0.8× jack_capture's | %s: %.2f× |" % (
                ch, p, "met" if ratio <= 0.8 else "**missed**", ratio))
        if t and a and p != 64:
            clean = [x for x, y in zip(t["xruns_runs"], a["xruns_runs"]) if y == 0]
            L.append("| %d ch / %d: 0 steady xruns where jack_capture has 0; bit-exact | %s; %s |" % (
                ch, p, ("met" if not any(clean) else "**missed**: %s" % clean) if clean else "not exercised",
                "exact %d/%d" % (sum(t["exact_runs"]), len(t["exact_runs"]))))
        others = by.get(("record", ch, p), {})
        if t and a and others.get("floor"):
            L.append(own_xruns_line(ch, p, t, a, others["floor"], others.get("none")))
    t, _ = get("record", 128, 64)
    if t and t.get("cycle"):
        period_us = 64 / RATE * 1e6
        pct = t["cycle"][2] / period_us * 100
        def maxima(r):
            return ", ".join("%.0f" % m if m is not None else "?" for m in r.get("cycle_max_runs") or [])
        fl = by.get(("record", 128, 64), {}).get("floor")
        floor_note = ("; every run's max: Tandem %s µs, the floor %s µs (the floor's median run %.1f µs = %.1f %%)" % (
            maxima(t), maxima(fl), fl["cycle"][2], fl["cycle"][2] / period_us * 100)) if fl and fl.get("cycle") else ""
        L.append("| cycle max at 128 ch below 20 %% of the period at 64 frames | %s: %.1f µs = %.1f %% (median run)%s |" % (
            "met" if pct < 20 else "**missed**", t["cycle"][2], pct, floor_note))
    return L


# The JACK client that is each tool's (the server names clients), and the measuring client of each role.
CLIENT = {("tandem", "record"): "tandem-rec", ("tandem", "play"): "tandem-play",
          ("jack_capture", "record"): "jack_capture", ("sndfile-jackplay", "play"): "jackplay",
          ("floor", "record"): "bench-floor"}
HARNESS = {"record": "bench-gen", "play": "bench-sink"}


def has_account(r):
    """Whether any of a row's runs carries the server's account (rows measured before it, or without a server, do
    not)."""
    return any(x is not None for x in r.get("server_runs") or [])


def account_table(by):
    """Who the server was waiting for at the steady xruns, by its own account (`server_account`), summed over each
    row's rounds: each stall once, under the first of these that fits."""
    L = ["| ch | period | role | tool | xruns (the monitor's) | stalls (the server's reports) | the server's own timer "
         "late | the tool's callback ran late | the tool not started, its input ready | the generator or sink late | "
         "other |", "|---" * 11 + "|"]
    for key in sorted(by, key=lambda k: (k[0] != "record", k[1], k[2])):
        role, ch, period = key
        for tool in (ANCHOR[role], "tandem", "floor", "none"):
            r = by[key].get(tool)
            if not r or not has_account(r):
                continue
            own, harness = CLIENT.get((tool, role)), HARNESS[role]
            n = dict(timer=0, own=0, waiting=0, harness=0, other=0)
            for events in r["server_runs"]:
                for ev in events or []:
                    c = ev["clients"]
                    if ev["timer_us"] is not None:
                        n["timer"] += 1
                    elif own and c.get(own) in ("Running", "Late"):
                        n["own"] += 1
                    elif own and c.get(own) == "Triggered" and harness not in c:
                        n["waiting"] += 1
                    elif harness in c:
                        n["harness"] += 1
                    else:
                        n["other"] += 1
            L.append("| %d | %d | %s | %s | %d | %d | %d | %s | %s | %d | %d |" % (
                ch, period, role, tool, sum(r["xruns_runs"]), sum(n.values()), n["timer"],
                n["own"] if own else "n/a", n["waiting"] if own else "n/a", n["harness"], n["other"]))
    return L


def upper_tail(k, n):
    """P(X >= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n if n else 1.0


def own_xruns_line(ch, p, t, a, fl, ctl):
    """Whether Tandem's xruns are more than those of a client that only copies (the floor), in the same rounds: a
    one-sided sign test over the rounds (in how many Tandem had more than the floor, in how many fewer). The round is
    the unit, not the xrun: one stall of the host gives a burst (38 notifications in one round at 256 / 128 in
    session 19, the generator named late in most of them), so xruns are not independent and a test on the sums
    judges a single burst. The control's (no recorder at all) are listed beside them."""
    more = sum(x > y for x, y in zip(t["xruns_runs"], fl["xruns_runs"]))
    fewer = sum(x < y for x, y in zip(t["xruns_runs"], fl["xruns_runs"]))
    pv = upper_tail(more, more + fewer)
    cs = sum(ctl["xruns_runs"]) if ctl else None
    rounds = "; ".join("%d / %d / %d" % x for x in zip(t["xruns_runs"], fl["xruns_runs"], a["xruns_runs"]))
    return ("| %d ch / %d: steady xruns not more than the floor's (a client that only copies; one-sided sign test over "
            "the rounds, p ≥ 0.05; not one of the issue's targets) | %s: Tandem had more in %d round(s), fewer in %d "
            "(p = %.2f); sums Tandem %d, the floor %d, jack_capture %d, no recorder %s; per round Tandem / floor / "
            "jack_capture: %s |" % (
                ch, p, "met" if pv >= 0.05 else "**missed**", more, fewer, pv, sum(t["xruns_runs"]),
                sum(fl["xruns_runs"]), sum(a["xruns_runs"]), "not run" if cs is None else cs, rounds))


def write_wide(path, rows, args, rt):
    by = {}
    for r in rows:
        by.setdefault((r["role"], r["channels"], r["period"]), {})[r["tool"]] = r
    L = ["## Wide: 128 and 256 channels, and the floor\n",
         "Measured by `scripts/bench.py --wide` on %s, %s; JACK scheduling: %s; %d s of audio per run; private servers "
         "started with `-p %d` (port limit). Same method and columns as above. The floor is `bench-client floor`: a "
         "minimal C client that connects to the generator and copies each port into a pre-faulted 4 s ring in memory "
         "(one `memcpy` per port and cycle, nothing else): how far each tool is from doing only the copy. Its cycle "
         "column is its own callback's cost, timed as Tandem times its own (the monotonic clock at entry and exit, "
         "every cycle). The row `none (no recorder)` is the control: the same window in the same rounds with no "
         "recorder connected (the server, the generator and the monitor only). " % (
             datetime.date.today().isoformat(), machine(), "real-time (-R)" if rt else "not real-time (-r)",
             args.seconds, PORT_MAX)]
    L[-1] += ("Runs per configuration: as many as the xruns column lists, the tools' order alternating.")
    noisy = [(k[1], k[2], by[k].get("none", {}).get("xruns_runs"), by[k]["floor"]["xruns_runs"])
             for k in sorted(by) if "floor" in by[k]]
    if any(sum(x) + sum(c or []) for _, _, c, x in noisy):
        L[-1] += (" The floor or the control had steady xruns too (per round; %s): a client that only copies is hit "
                  "as well (this VM's host takes its vCPUs away for milliseconds), so compare the tools with the floor "
                  "and with each other, not with zero.\n" % "; ".join(
                      "%d ch / %d: no recorder %s, the floor %s" % (
                          ch, p, ", ".join(map(str, c)) if c else "not run", ", ".join(map(str, x)))
                      for ch, p, c, x in noisy))
    else:
        L[-1] += "\n"
    L.append("### Recording\n")
    L += tool_table(by, "record")
    if any(k[0] == "play" for k in by):
        L.append("\n### Playback\n")
        L += tool_table(by, "play")
    if any(has_account(r) for d in by.values() for r in d.values()):
        L.append("\n### Who the server was waiting for\n")
        L.append("jackd's own account of the steady xruns (its messages over each run's steady window), one stall "
                 "at a time. At an xrun JACK2 names every client that had not finished the cycle: in its callback, "
                 "finished after the next cycle began, or not started (signalled, not yet running: waiting for an "
                 "input or for a CPU). Its dummy driver also says when its own timer woke too late; it then runs the "
                 "cycles it missed back to back, and whoever is caught in one of them is named, so such a stall is "
                 "counted as the server's. Each stall goes under the first of: the server's timer late; the tool's "
                 "own client in its callback or finished late; the tool's client not started though its input was "
                 "ready; the generator (recording) or the sink (playback) not finished; other. JACK2 sends an xrun "
                 "notification for each client it names and one for the late timer, so one stall can count two or "
                 "three in the monitor's column.\n")
        L += account_table(by)
    L.append("\n### Targets (issue 23)\n")
    L += wide_targets(by)
    splice(path, "wide", L)


def write_report(path, rows, startups, comb, writers, args, rt, started):
    by = {}
    for r in rows:
        by.setdefault((r["role"], r["channels"], r["period"]), {})[r["tool"]] = r
    L = []
    L.append("# Performance\n")
    L.append("Measured by `make bench` (`scripts/bench.py%s`) on %s, %s; JACK scheduling: %s; %d s of audio per run."
             % (" --quick" if args.quick else "", datetime.date.today().isoformat(), machine(),
                "real-time (-R)" if rt else "not real-time (-r)", args.seconds))
    L.append("Each configuration has its own private dummy server (48 kHz), a fixed generator or memory sink "
             "(`bench/bench-client.c`) and a monitor client; the tools of one configuration run back to back on it, "
             "after `sync` and a pause, each recording deleted once checked, and the order alternates between "
             "configurations. "
             "Every tool runs %d times per configuration (the order alternating); CPU is the median over the runs of the "
             "user+system time of the tool's process from start to exit, per second of audio, and the ratio is Tandem's median over "
             "the anchor's; xruns and bit-exactness are listed for every run. Private memory "
             "is the peak RssAnon (JACK's shared memory excluded). Xruns are counted by the monitor from 1 s after the "
             "tool started. Bit-exact: every recorded frame equals the source in order (recording: against the looping "
             "source; playback: every file frame from the first, nothing after). The generator and the sink note every "
             "cycle of their own whose frame time was not one period after their previous one (JACK ran that cycle "
             "without them, or ran them late); a loss that begins within two periods of such a cycle is the measuring "
             "client's, not the tool's, and is listed apart for either tool.\n" % REPEAT)
    L.append("## Recording: Tandem vs jack_capture\n")
    L += tool_table(by, "record")
    L.append("\n## Playback: Tandem vs sndfile-jackplay\n")
    L += tool_table(by, "play")
    L += targets(by)
    if comb:
        cyc = comb.get("cycle")
        L.append("\n## Combined: 32 channels recorded and 32 played at once, period 64\n")
        L.append("`tandem run` with one preset (recorder 32 in, player 32 out looping, generator and sink connected by "
                 "rules), %d s: CPU %s s per audio second (steady %s %%), private memory %.1f MiB, xruns %d, "
                 "dropped (overrun) frames %s, frames of skipped cycles %s, DSP mean %s %% / max %s %%." % (
                     args.combined, fmt(comb["cpu_per_audio_s"]), fmt(comb["cpu_steady_pct"], "%.2f"),
                     comb["rss_anon_kb"] / 1024, comb["xruns_steady"], comb.get("dropped"), comb.get("missed"),
                     fmt(comb["dsp_mean"], "%.1f"), fmt(comb["dsp_max"], "%.1f")))
    if startups:
        L.append("\n## Start-up\n")
        L.append("From launching `tandem record -c 16` to its 16th port appearing in the graph (5 launches): "
                 "median %.0f ms, max %.0f ms." % (sorted(startups)[len(startups) // 2] * 1000, max(startups) * 1000))
    if writers:
        L.append("\n## Offline writer throughput\n")
        L.append("`tandem bench-writer`: the disk writer's own `SoundFileWriter`, music-like material, 8192-frame "
                 "writes into the page cache (so this is encoding cost, not disk speed).\n")
        L.append("| format | channels | × real time | bytes per audio second |")
        L.append("|---|---|---|---|")
        for w in writers:
            if "error" in w:
                L.append("| %s | %s | not supported by libsndfile at this channel count | |" % (w["format"], w["channels"]))
            else:
                L.append("| %s | %s | %.0f | %.0f |" % (w["format"], w["channels"], float(w["x_realtime"]),
                                                        float(w["bytes"]) / float(w["seconds"])))
    L.append("\n## Commands\n")
    L.append("Generated by `make bench` in %.0f s. Per run (OUT/IN are the run's files; the private server is "
             "`jackd -n NAME %s -d dummy -r 48000 -p PERIOD -C 2 -P 2`):\n" % (time.monotonic() - started, "-R" if rt else "-r"))
    seen = set()
    for r in rows:
        c = re.sub(r"/tmp/\S+", "DIR", r["cmd"]).replace(TANDEM, "tandem")
        if (r["tool"], r["role"]) in seen:
            continue
        seen.add((r["tool"], r["role"]))
        L.append("- %s %s: `%s`" % (r["tool"], r["role"], c))
    splice(path, "bench", L)


def run_wide(args, exe, workdir, rt, started, idx):
    """The wide configurations (with the floor beside the recorders); rows are merged into .build/bench-wide.json and
    the wide part of the report is written from it."""
    global FLOOR
    cache = os.path.join(ROOT, ".build", "bench-wide.json")
    try:
        with open(cache) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        kept = []
    FLOOR = True
    for ch, period in WIDE:
        for role, measure in (("record", measure_record), ("play", measure_play)):
            idx += 1
            if not args.only or "%s-%d-%d" % (role, ch, period) in args.only:
                got = measure((ch, period), exe, workdir, rt, args.seconds, idx)
                kept = [r for r in kept if (r["role"], r["channels"], r["period"]) != (role, ch, period)]
                kept += [{k: v for k, v in r.items() if k != "text"} for r in got]
                with open(cache, "w") as f:     # after each configuration: an interrupted run keeps what it measured
                    json.dump(kept, f)
    write_wide(args.out, kept, args, rt)
    log("wrote the wide part of %s in %.0f s" % (args.out, time.monotonic() - started))


def main():
    global TANDEM
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "release", "tandem"))
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--combined", type=int, default=60)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--wide", action="store_true", help="only the wide configurations and the floor; rows measured "
                    "are kept in .build/bench-wide.json, so --only can add to them")
    ap.add_argument("--repeat", type=int, default=6, help="runs per tool and configuration")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "PERFORMANCE.md"))
    ap.add_argument("--loudness", action="store_true", help="with --only record-…: also run Tandem recording with "
                    "--loudness, side by side (the loudness meters' cost)")
    ap.add_argument("--only", action="append", default=[], metavar="ROLE-CH-PERIOD",
                    help="while developing: run only these configurations (e.g. play-16-256, or combined); "
                         "skips the start-up and writer parts and writes no report")
    args = ap.parse_args()
    TANDEM = os.path.realpath(args.tandem)
    global REPEAT, LOUDNESS
    LOUDNESS = args.loudness
    REPEAT = max(1, args.repeat if not args.quick else 1)
    if args.quick:
        args.seconds, args.combined = 5, 10
    started = time.monotonic()
    workdir = tempfile.mkdtemp(prefix="tandem-bench-")
    rt = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
    exe = helper(workdir)
    channels = [2, 16] if args.quick else [2, 16, 64]
    periods = [256] if args.quick else [64, 256]
    rows, idx = [], 0
    if args.wide:
        run_wide(args, exe, workdir, rt, started, idx)
        return
    for ch in channels:
        for period in periods:
            for role, measure in (("record", measure_record), ("play", measure_play)):
                idx += 1
                if not args.only or "%s-%d-%d" % (role, ch, period) in args.only:
                    rows += measure((ch, period), exe, workdir, rt, args.seconds, idx)
    if args.only:
        if "combined" in args.only:
            c = combined(exe, workdir, rt, args.combined)
            log("combined: cpu %.3f s/s, %.1f MiB, %d xruns, DSP mean %.1f %% max %.1f %%, dropped %s, missed %s"
                % (c["cpu_per_audio_s"], c["rss_anon_kb"] / 1024, c["xruns_steady"], c["dsp_mean"], c["dsp_max"],
                   c["dropped"], c["missed"]))
        log("--only: %d rows measured, no report written" % len(rows))
        return
    comb = combined(exe, workdir, rt, args.combined)
    comb["cycle"] = None
    starts = startup(exe, workdir, rt)
    writers = []
    for ch in (2, 16):
        out = subprocess.run([TANDEM, "bench-writer", "-c", str(ch), "--seconds", "20", "-d", workdir],
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            d = dict(kv.split("=", 1) for kv in shlex.split(line)[1:])
            d.setdefault("channels", str(ch))
            writers.append(d)
    write_report(args.out, rows, starts, comb, writers, args, rt, started)
    if not args.quick:
        run_wide(args, exe, workdir, rt, started, idx)
    log("wrote %s in %.0f s" % (args.out, time.monotonic() - started))


TANDEM = None
REPEAT = 6
LOUDNESS = False
FLOOR = False
if __name__ == "__main__":
    main()
