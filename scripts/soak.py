#!/usr/bin/env python3
"""Tandem's soak run: 16 channels recorded and 16 played for a long time (default 10 minutes) on a private real-time
dummy server, with a generator feeding the recorder and a sink taking the player's output. Memory, file handles and
threads of the tandem process are sampled every 10 s; drops, underruns and xruns are read from `tandem status` at
the end. Writes the figures into docs/RELIABILITY.md (between the soak markers). Needs what `make bench` needs.

    scripts/soak.py                 # 10 minutes
    scripts/soak.py --minutes 2     # a shorter look
"""
import argparse, datetime, json, os, re, signal, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def status_of(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "Threads"):
                out[k] = int(v.split()[0])
    out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "release", "tandem"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "RELIABILITY.md"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tandem-soak-")
    name = "tsoak-%d" % os.getpid()
    env = dict(os.environ, JACK_DEFAULT_SERVER=name, JACK_NO_START_SERVER="1", JACK_NO_AUDIO_RESERVATION="1")
    rt = subprocess.run(["chrt", "-f", "10", "true"], capture_output=True).returncode == 0
    exe = os.path.join(work, "bench-client")
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(ROOT, "bench", "bench-client.c"), "-ljack"], check=True)
    wav = os.path.join(work, "n16.wav")
    raw = os.path.join(work, "n16.f32")
    subprocess.run(["sox", "-R", "-D", "-n", "-r", "48000", "-c", "16", "-b", "24", "-e", "signed-integer", wav,
                    "synth", "10"] + ["whitenoise"] * 16 + ["vol", "0.5"], check=True)
    subprocess.run(["sox", "-D", wav, "-t", "raw", "-e", "floating-point", "-b", "32", "-L", raw], check=True)
    preset = os.path.join(work, "soak.toml")
    with open(preset, "w") as f:
        f.write('[session]\nname = "soak"\ndirectory = "%s"\ncontrol_port = 9977\n'
                '[recorder]\nchannels = 16\nsample = "int24"\nrotate = 60\n'
                '[player]\nchannels = 16\nqueue = ["%s"]\nloop = "item"\n'
                '[[connect]]\nfrom = "bench-gen:out_*"\nto = "tandem-rec:in_*"\n'
                '[[connect]]\nfrom = "tandem-play:out_*"\nto = "bench-sink:in_*"\n' % (work, wav))
    procs = []
    def start(argv, **kw):
        p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=kw.get("stdout", subprocess.DEVNULL),
                             stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(p)
        return p
    jackd = start(["jackd", "-n", name, "-R" if rt else "-r", "-d", "dummy", "-r", "48000", "-p", "256",
                   "-C", "2", "-P", "2"])
    for _ in range(100):
        if subprocess.run(["jack_lsp"], env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.05)
    start([exe, "gen", "bench-gen", "16", raw])
    start([exe, "sink", "bench-sink", "16", "1", os.devnull])
    time.sleep(1)
    log = open(os.path.join(work, "tandem.log"), "w")
    tandem = start([args.tandem, "run", "--no-view", preset], stdout=log)
    samples = []
    t0 = time.monotonic()
    end = t0 + args.minutes * 60
    time.sleep(5)
    while time.monotonic() < end and tandem.poll() is None:
        s = status_of(tandem.pid)
        s["t"] = time.monotonic() - t0
        samples.append(s)
        time.sleep(10)
    st = subprocess.run([args.tandem, "status", "--port", "9977", "--json"], capture_output=True, text=True, env=env)
    status = json.loads(st.stdout) if st.returncode == 0 else {}
    tandem.send_signal(signal.SIGTERM)
    code = tandem.wait(30)
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    text = open(os.path.join(work, "tandem.log")).read()
    dropped = sum(int(m) for m in re.findall(r"dropped (\d+), xruns", text))
    rec, play = status.get("recorder", {}), status.get("player", {})
    first, last = samples[0], samples[-1]
    growth_rss = (last["VmRSS"] - first["VmRSS"]) / 1024
    lines = [
        "<!-- soak:begin -->",
        "Measured by `make soak` (`scripts/soak.py --minutes %g`) on %s: %s, private dummy server %s, period 256." % (
            args.minutes, datetime.date.today().isoformat(), "%d cores" % os.cpu_count(), "-R" if rt else "-r"),
        "16 channels recorded (int24, a chunk a minute) and 16 played (a 10 s file looping) for %.1f minutes; the "
        "tandem process sampled every 10 s (%d samples):" % ((last["t"] + 10) / 60, len(samples)),
        "",
        "| | first sample | last sample | min | max |",
        "|---|---|---|---|---|",
        "| resident memory (MiB) | %.1f | %.1f | %.1f | %.1f |" % (first["VmRSS"] / 1024, last["VmRSS"] / 1024,
            min(s["VmRSS"] for s in samples) / 1024, max(s["VmRSS"] for s in samples) / 1024),
        "| private memory (MiB) | %.1f | %.1f | %.1f | %.1f |" % (first["RssAnon"] / 1024, last["RssAnon"] / 1024,
            min(s["RssAnon"] for s in samples) / 1024, max(s["RssAnon"] for s in samples) / 1024),
        "| open file descriptors | %d | %d | %d | %d |" % (first["fds"], last["fds"], min(s["fds"] for s in samples),
            max(s["fds"] for s in samples)),
        "| threads | %d | %d | %d | %d |" % (first["Threads"], last["Threads"], min(s["Threads"] for s in samples),
            max(s["Threads"] for s in samples)),
        "",
        "At the end: recorder dropped (overrun) frames %s, xruns seen by its client %s; player underrun frames %s; "
        "dropped frames over all finished chunks/takes %d; exit code %s. Resident memory changed by %+.1f MiB "
        "between the first and the last sample." % (rec.get("droppedFrames"), rec.get("xruns"),
            play.get("underrunFrames"), dropped, code, growth_rss),
        "<!-- soak:end -->",
    ]
    doc = open(args.out).read() if os.path.exists(args.out) else ""
    block = "\n".join(lines)
    if "<!-- soak:begin -->" in doc:
        doc = re.sub(r"<!-- soak:begin -->.*<!-- soak:end -->", lambda _: block, doc, flags=re.S)
    else:
        doc = doc.rstrip() + "\n\n## Soak\n\n" + block + "\n"
    open(args.out, "w").write(doc)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
