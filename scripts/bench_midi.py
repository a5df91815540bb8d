#!/usr/bin/env python3
"""A synth rack against jalv, both playing the same instrument from the same MIDI (issue 20's benchmark row).

For each period (64, 256) one private dummy JACK server (48 kHz, real-time scheduling when the machine allows it);
on it jack_midiseq loops a one-second sequence of eight notes (an event every 1/16 s: note-ons and note-offs), and,
one after the other, each host plays mda EPiano (deterministic, stereo) from it:
  tandem   one `tandem rack` (`--connect-midi-in seq:out`)
  jalv     one jalv process, its MIDI input connected to seq:out
Figures: CPU s per audio s (every thread of the tool, /proc/PID/task/*/schedstat, over the window), JACK DSP load
mean / max, xruns (bench-client's monitor), and private memory. MIDI-to-audio latency is not a timing
figure here: it is measured sample for sample by RackMIDITests.aNoteOnAtFrameKOfACycleSoundsAtFrameK (a note-on at
frame k of a cycle sounds at frame k: 0 frames beyond the plugin's own, at periods 64 and 1024).

The section between <!-- midi:begin --> and <!-- midi:end --> of docs/PERFORMANCE.md is replaced (appended when
missing).

    scripts/bench_midi.py            # 10 s windows, periods 64 and 256 (about 2 minutes)
"""
import argparse, datetime, os, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import bench as B  # noqa: E402
import bench_rack as R  # noqa: E402

URI = "http://drobilla.net/plugins/mda/EPiano"
BEGIN, END = "<!-- midi:begin -->", "<!-- midi:end -->"
log = B.log


def sequence():
    """jack_midiseq's arguments: a 48000-frame loop, eight notes of 3000 frames, one every 6000 frames."""
    args = ["seq", "48000"]
    for i in range(8):
        args += [str(i * 6000), str(60 + (i * 5) % 24), "3000"]
    return args


def ports(env, flags):
    """Ports whose `jack_lsp -t -p` lines (properties, type) contain every one of `flags`."""
    out = R.run(["jack_lsp", "-t", "-p"], env).stdout.split("\n")
    described, name = {}, None
    for line in out:
        if not line.startswith("\t"):
            name = line.strip()
            described[name] = ""
        elif name:
            described[name] += line
    return [n for n, text in described.items() if n and all(f in text for f in flags)]


def start_tandem(tool, tandem):
    tool.spawn([tandem, "rack", "--name", "syn", "--client", "syn", "--plugin", URI, "--connect-midi-in", "seq:out",
                "--no-view"], "tandem")
    if not R.wait_ports(tool.env, ["syn:out_1"], 20):
        raise RuntimeError("the rack did not start")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "seq:out" not in R.run(["jack_lsp", "-c", "syn:midi_in"], tool.env).stdout:
        time.sleep(0.1)
    return "syn:out_1"


def start_jalv(tool, _):
    tool.spawn(["jalv", "-x", "-n", "jl", URI], "jalv", stdin_pipe=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        midi = [p for p in ports(tool.env, ["input", "midi"]) if p.startswith("jl:")]
        audio = [p for p in ports(tool.env, ["output", "audio"]) if p.startswith("jl:")]
        if midi and audio:
            R.connect(tool.env, "seq:out", midi[0])
            return sorted(audio)[0]
        time.sleep(0.1)
    raise RuntimeError("jalv's ports did not appear")


def measure(env, mon, name, starter, tandem, workdir, seconds):
    tool = R.Tool(name, env, workdir)
    row = dict(tool=name)
    try:
        out = starter(tool, tandem)
        time.sleep(2.0)
        pids = tool.pids()
        t0, c0 = time.monotonic(), R.cpu_ns(pids)
        peak = 0
        while time.monotonic() - t0 < seconds:
            time.sleep(0.25)
            peak = max(peak, R.anon_kb(pids))
        t1, c1 = time.monotonic(), R.cpu_ns(pids)
        loads = [float(l[2]) for l in mon.lines if l and l[0] == "LOAD" and t0 <= float(l[1]) <= t1]
        xr = [l for l in mon.lines if l and l[0] == "XRUN" and t0 <= float(l[1]) <= t1]
        row.update(cpu=(c1 - c0) / 1e9 / (t1 - t0), dsp_mean=sum(loads) / len(loads) if loads else float("nan"),
                   dsp_max=max(loads) if loads else float("nan"), xruns=len(xr), mem_mib=peak / 1024.0,
                   out=out, alive=all(p.poll() is None for p in tool.procs))
    except Exception as e:  # a host that cannot run here is a row that says why
        row["error"] = str(e)
        log("%s: %s" % (name, e))
    finally:
        tool.stop()
        time.sleep(0.5)
    return row


def configuration(period, tandem, exe, workdir, rt, seconds):
    server = B.Server("midibench%d" % os.getpid(), period, 1, rt, workdir)
    env = server.env
    rows, mon, seq = [], None, None
    try:
        mon = B.Proc([exe, "mon", "mon"], env, stdout=subprocess.PIPE)
        lines = B.LineCollector(mon)
        lines.ready.wait(10)
        seq = subprocess.Popen(["jack_midiseq"] + sequence(), env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
        if not R.wait_ports(env, ["seq:out"]):
            raise RuntimeError("jack_midiseq did not start")
        for name, starter in [("tandem", start_tandem), ("jalv", start_jalv)]:
            log("period %d: %s" % (period, name))
            r = measure(env, lines, name, starter, tandem, workdir, seconds)
            r["period"] = period
            rows.append(r)
    finally:
        if seq:
            seq.terminate()
            seq.wait(5)
        if mon:
            mon.stop()
        server.stop()
    return rows


def render(rows, started, path):
    L = [BEGIN, "", "## MIDI: a synth rack against jalv, the same instrument from the same MIDI", "",
         "mda EPiano (`%s`, stereo) played by `jack_midiseq` looping eight notes a second (an event every 1/16 s), "
         "hosted by one `tandem rack` and by one jalv, one after the other on one private dummy server per period "
         "(48 kHz, real-time scheduling), 10 s windows after 2 s of settling. Columns as in the rack section. "
         "MIDI-to-audio latency inside a rack: 0 frames beyond the plugin's own, measured sample for sample by "
         "`RackMIDITests.aNoteOnAtFrameKOfACycleSoundsAtFrameK` (a note-on at frame k of a cycle sounds at frame k, "
         "at periods 64 and 1024), not by this timing run." % URI, "",
         "| period | tool | CPU s / audio s | × jalv | DSP mean % | DSP max % | xruns | private MiB |",
         "|---|---|---|---|---|---|---|---|"]
    by = {(r["period"], r["tool"]): r for r in rows}
    for r in rows:
        if "error" in r:
            L.append("| %d | %s | (%s) | | | | | |" % (r["period"], r["tool"], r["error"]))
            continue
        j = by.get((r["period"], "jalv"))
        ratio = "%.2f" % (r["cpu"] / j["cpu"]) if j and "cpu" in j and j["cpu"] > 0 else ""
        L.append("| %d | %s | %.4f | %s | %.1f | %.1f | %d | %.1f |" % (
            r["period"], r["tool"], r["cpu"], ratio, r["dsp_mean"], r["dsp_max"], r["xruns"], r["mem_mib"]))
    L += ["", "Run: `scripts/bench_midi.py` (%s, %.0f s)." % (
        started.strftime("%Y-%m-%d %H:%M UTC"),
        (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()), "", END]
    R.splice(path, BEGIN, END, "\n".join(L) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", default=os.path.join(B.ROOT, ".build", "release", "tandem"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--out", default=os.path.join(B.ROOT, "docs", "PERFORMANCE.md"))
    args = ap.parse_args()
    started = datetime.datetime.now(datetime.timezone.utc)
    workdir = tempfile.mkdtemp(prefix="tandem-midibench-")
    exe = B.helper(workdir)
    rt = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
    rows = []
    for period in (64, 256):
        rows += configuration(period, args.tandem, exe, workdir, rt, args.seconds)
    for r in rows:
        log(str(r))
    render(rows, started, args.out)
    log("wrote %s" % args.out)


if __name__ == "__main__":
    main()
