#!/usr/bin/env python3
"""Offline rendering: `tandem render` against ecasound, file to file, through the same LV2 chain (docs/RENDER.md).

One input file of SECONDS at 48 kHz (float32 WAV, white noise, each channel its own stream) goes through a chain of
N copies of the SWH amplifier (`http://plugin.org.uk/swh-plugins/amp`, mono, gain -0.5 dB each), for N = 1, 8, 32
and 2 and 16 channels:

  tandem     tandem render --plugin URI,gain=G (N times) --inputs C --period 1024 --preroll 0 --tail 0 -o OUT IN
  ecasound   ecasound -q -b:1024 -i IN -f:f32_le,C,48000 -o OUT -elv2:URI,G (N times)

Both chains are the same: a mono plugin on a C-channel path runs as C instances side by side in Tandem (ChainLayout
rule 1, docs/PRESETS.md "Channel shapes") and as one instance per channel in ecasound (ecasound(1), -elv2: "a
separate plugin instance is created for each channel"), so each runs C x N instances over the same frames, 1024 at a
time. Tandem runs no pre-roll and no tail here (--preroll 0 --tail 0: by default it runs a second of silence before
the input and looks for the end of a tail after it), so both push exactly the input's frames through the chain.

Each configuration is timed best of ROUNDS (the two tools alternate which goes first), as wall time of the whole
process, and given as x real time (audio seconds / wall seconds). The same command over one cycle of input gives
each tool's fixed cost (start-up, plugin scan, instantiation, shut-down; ecasound loads every LV2 bundle installed,
seconds on a machine with many), and the "net" figures leave it out. The outputs of the first round are compared
sample by sample (numpy when it is there, else plain Python, slowly): the same frame count, the largest absolute
difference, and each channel's gain against the input, which must be N x G dB in both (a channel left out or moved
shows). Then Tandem's batches: 4 inputs (2 channels, N = 8) with --jobs 1 and --jobs 2.

Prints one markdown report on stdout (progress on stderr).

    bench/render_vs_ecasound.py                                  # 60 s, best of 3 (about 5 minutes on 2 cores,
                                                                 # most of it ecasound's start-up)
    bench/render_vs_ecasound.py --amp-bundle-only                # both tools see only the amplifier's bundle
    bench/render_vs_ecasound.py --seconds 2 --rounds 1           # a quick check that it all runs
    bench/render_vs_ecasound.py --tandem .build/debug/tandem     # another binary (debug figures mean nothing)

Python's standard library, sox and ecasound (installed with apt when missing and run as root: Makefile
BENCH_PACKAGES); numpy, when it is there, makes the inputs and the comparison fast.
"""
import argparse, array, datetime, math, os, platform, random, resource, shutil, struct, subprocess, sys, tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
RATE = 48000
PERIOD = 1024
URI = "http://plugin.org.uk/swh-plugins/amp"

try:
    import numpy as np
except ImportError:  # inputs and comparison in plain Python, slowly
    np = None


def log(msg):
    print("# " + msg, file=sys.stderr, flush=True)


def warn(msg):
    bar = "!" * 78
    print("\n".join([bar, "!! " + msg, bar]), file=sys.stderr, flush=True)


def tandem_binary(asked):
    """The binary asked for, else the release build, else the debug build with a loud warning. (path, is_debug)"""
    if asked:
        path = os.path.realpath(asked)
        if not os.path.exists(path):
            sys.exit("no %s" % asked)
        debug = "/debug/" in path
        if debug:
            warn("timing a DEBUG build (%s). Debug Swift is many times slower than release: THESE NUMBERS MEAN "
                 "NOTHING about Tandem's speed." % path)
        return path, debug
    release = os.path.join(ROOT, ".build", "release", "tandem")
    if os.path.exists(release):
        return release, False
    debug = os.path.join(ROOT, ".build", "debug", "tandem")
    if os.path.exists(debug):
        warn("no %s (make release): timing the DEBUG build %s. Debug Swift is many times slower than release: "
             "THESE NUMBERS MEAN NOTHING about Tandem's speed." % (release, debug))
        return debug, True
    sys.exit("no tandem binary: make release (or give --tandem PATH)")


def ensure_ecasound():
    if shutil.which("ecasound"):
        return
    if os.geteuid() != 0:
        sys.exit("ecasound is not installed: sudo apt-get install -y ecasound (Makefile BENCH_PACKAGES)")
    log("installing ecasound with apt")
    subprocess.run(["apt-get", "install", "-y", "ecasound"], check=True, stdout=subprocess.DEVNULL)
    if not shutil.which("ecasound"):
        sys.exit("apt-get install ecasound did not give an ecasound")


def version(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
        return out.strip().split("\n")[0]
    except (OSError, subprocess.SubprocessError):
        return "?"


def make_input(path, channels, frames, seed=1):
    """White noise (-0.5 to 0.5), float32 WAV, each channel its own stream (so the channel order is checked too)."""
    raw = path + ".f32"
    if np is not None:
        data = np.random.default_rng(seed).uniform(-0.5, 0.5, size=(frames, channels)).astype("<f4")
        with open(raw, "wb") as f:
            f.write(data.tobytes())
    else:
        rng = random.Random(seed)
        with open(raw, "wb") as f:
            for start in range(0, frames, 65536):
                block = array.array("f", (rng.uniform(-0.5, 0.5) for _ in range(min(65536, frames - start) * channels)))
                if sys.byteorder != "little":
                    block.byteswap()
                f.write(block.tobytes())
    subprocess.run(["sox", "-t", "f32", "-r", str(RATE), "-c", str(channels), raw, "-e", "floating-point", "-b", "32",
                    path], check=True)
    os.unlink(raw)


def timed(argv, env=None):
    """Runs argv; (wall seconds, cpu seconds of the process and its children). Exits loudly when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit("failed (exit %d): %s\n%s%s" % (r.returncode, " ".join(argv), r.stdout, r.stderr))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def tandem_argv(tandem, n, channels, gain, out, inputs, jobs=None):
    argv = [tandem, "render", "-q", "--period", str(PERIOD), "--preroll", "0", "--tail", "0", "--inputs", str(channels)]
    for _ in range(n):
        argv += ["--plugin", "%s,gain=%s" % (URI, gain)]
    if jobs:
        argv += ["--jobs", str(jobs)]
    return argv + ["-o", out] + inputs


def ecasound_argv(n, channels, gain, out, inp):
    # -b: frames per buffer, as Tandem's period. -f applies to the output only (the input's header says its own).
    argv = ["ecasound", "-q", "-b:%d" % PERIOD, "-i", inp, "-f:f32_le,%d,%d" % (channels, RATE), "-o", out]
    return argv + ["-elv2:%s,%s" % (URI, gain)] * n


# Reading float WAVs (Tandem writes WAVE_FORMAT_EXTENSIBLE with a bext chunk, ecasound plain IEEE float).

def read_wav(path):
    """(channels, frames, interleaved float32 samples as numpy array or array('f'))."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:4] not in (b"RIFF", b"RF64") or raw[8:12] != b"WAVE":
        raise ValueError("%s: not a WAV file" % path)
    pos, channels, bits, tag = 12, None, None, None
    while pos + 8 <= len(raw):
        cid, size = raw[pos:pos + 4], struct.unpack("<I", raw[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"fmt ":
            tag, channels = struct.unpack("<HH", raw[body:body + 4])
            bits = struct.unpack("<H", raw[body + 14:body + 16])[0]
            if tag == 0xFFFE:
                tag = struct.unpack("<H", raw[body + 24:body + 26])[0]
        if cid == b"data":
            if tag != 3 or bits != 32:
                raise ValueError("%s: not float32 (format %s, %s bits)" % (path, tag, bits))
            if size == 0xFFFFFFFF or body + size > len(raw):
                size = len(raw) - body
            size -= size % (4 * channels)
            if np is not None:
                samples = np.frombuffer(raw, dtype="<f4", count=size // 4, offset=body)
            else:
                samples = array.array("f")
                samples.frombytes(raw[body:body + size])
                if sys.byteorder != "little":
                    samples.byteswap()
            return channels, size // (4 * channels), samples
        pos = body + size + (size & 1)
    raise ValueError("%s: no data chunk" % path)


def compare(inp, a, b, channels, expected_db):
    """Sample comparison of two outputs (and each against the input's level): a dict of findings."""
    ca, fa, sa = read_wav(a)
    cb, fb, sb = read_wav(b)
    ci, fi, si = read_wav(inp)
    found = {"frames_a": fa, "frames_b": fb, "frames_in": fi, "channels_a": ca, "channels_b": cb}
    if ca != channels or cb != channels:
        found["problem"] = "channel counts %d and %d, %d expected" % (ca, cb, channels)
        return found
    n = min(fa, fb, fi)
    if np is not None:
        A = sa[:n * ca].reshape(n, ca).astype(np.float64)
        B = sb[:n * cb].reshape(n, cb).astype(np.float64)
        I = si[:n * ci].reshape(n, ci).astype(np.float64)
        found["max_abs_diff"] = float(np.max(np.abs(A - B))) if n else 0.0
        found["identical"] = bool(n and np.array_equal(A, B))
        rms = lambda x: np.sqrt(np.mean(x * x, axis=0))
        ri = rms(I)
        ga, gb = 20 * np.log10(rms(A) / ri), 20 * np.log10(rms(B) / ri)
        found["gain_a"] = [float(x) for x in ga]
        found["gain_b"] = [float(x) for x in gb]
        # Each channel its own stream (else the channel order would go unchecked).
        found["distinct_channels"] = ci < 2 or not np.array_equal(I[:, 0], I[:, 1])
    else:
        worst, same = 0.0, True
        for k in range(n * ca):
            d = abs(sa[k] - sb[k])
            if d > worst:
                worst = d
            if sa[k] != sb[k]:
                same = False
        found["max_abs_diff"], found["identical"] = worst, same
        gains = []
        for samples in (sa, sb):
            g = []
            for ch in range(ca):
                e = sum(samples[i * ca + ch] ** 2 for i in range(0, n, 7))
                e0 = sum(si[i * ci + ch] ** 2 for i in range(0, n, 7))
                g.append(10 * math.log10(e / e0) if e > 0 and e0 > 0 else float("-inf"))
            gains.append(g)
        found["gain_a"], found["gain_b"] = gains
        found["distinct_channels"] = ci < 2 or any(si[i * ci] != si[i * ci + 1] for i in range(min(n, 1000)))
    off = [g for g in found["gain_a"] + found["gain_b"] if abs(g - expected_db) > 0.05]
    if fa != fb or fa != fi:
        found["problem"] = "frame counts differ: tandem %d, ecasound %d, input %d" % (fa, fb, fi)
    elif off:
        found["problem"] = "a channel's gain is not %.1f dB: tandem %s, ecasound %s" % (
            expected_db, ["%.2f" % g for g in found["gain_a"]], ["%.2f" % g for g in found["gain_b"]])
    elif found["max_abs_diff"] > 1e-5:
        found["problem"] = "the outputs differ by up to %.3g" % found["max_abs_diff"]
    elif not found["distinct_channels"]:
        found["problem"] = "the input's channels are the same stream: channel order unchecked"
    return found


def fmt_diff(found):
    if "max_abs_diff" not in found:
        return "-"
    if found.get("identical"):
        return "0 (identical)"
    return "%.3g" % found["max_abs_diff"]


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "%s, %d CPU(s), %s" % (model, os.cpu_count() or 0, platform.platform())


def run_tool(tool, tandem, n, c, gain, inp, out, env):
    """One render of inp through the chain by `tool`; (wall s, cpu s)."""
    argv = tandem_argv(tandem, n, c, gain, out, [inp]) if tool == "tandem" else ecasound_argv(n, c, gain, out, inp)
    return timed(argv, env)


def amp_bundle_only(tandem, workdir):
    """An LV2_PATH that holds the amplifier's bundle alone (a folder with a link to it)."""
    shown = subprocess.run([tandem, "plugins", "show", URI], capture_output=True, text=True).stdout
    bundle = next((l.split("file://", 1)[1].strip().rstrip("/") for l in shown.split("\n")
                   if l.strip().startswith("bundle: file://")), None)
    if not bundle or not os.path.isdir(bundle):
        sys.exit("cannot find the bundle of %s in `tandem plugins show`" % URI)
    folder = os.path.join(workdir, "lv2")
    os.mkdir(folder)
    os.symlink(bundle, os.path.join(folder, os.path.basename(bundle)))
    return folder


def remove_output(tool, out):
    os.unlink(out)
    if tool == "tandem":
        os.unlink(os.path.splitext(out)[0] + ".json")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", default=None, help="the tandem binary (default .build/release/tandem; the debug build "
                    "with a warning when there is no release build)")
    ap.add_argument("--seconds", type=float, default=60, help="input length in seconds (default 60)")
    ap.add_argument("--rounds", type=int, default=3, help="runs per tool and configuration; the best counts (default 3)")
    ap.add_argument("--counts", default="1,8,32", help="chain lengths (default 1,8,32)")
    ap.add_argument("--channels", default="2,16", help="channel counts (default 2,16)")
    ap.add_argument("--gain", type=float, default=-0.5, help="each amplifier's gain in dB (default -0.5)")
    ap.add_argument("--batch-inputs", type=int, default=4, help="inputs of the --jobs comparison (default 4; 0: none)")
    ap.add_argument("--batch-plugins", type=int, default=8, help="chain length of the --jobs comparison (default 8)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (inputs and first-round outputs)")
    ap.add_argument("--amp-bundle-only", action="store_true", help="LV2_PATH with the amplifier's bundle alone, for "
                    "both tools (leaves out the scan of every installed plugin at start-up)")
    args = ap.parse_args()
    counts = [int(x) for x in args.counts.split(",")]
    widths = [int(x) for x in args.channels.split(",")]
    rounds = max(1, args.rounds)
    frames = int(round(args.seconds * RATE))
    seconds = frames / RATE

    tandem, debug = tandem_binary(args.tandem)
    ensure_ecasound()
    if not shutil.which("sox"):
        sys.exit("sox is not installed (make deps)")
    if subprocess.run([tandem, "plugins", "show", URI], capture_output=True).returncode != 0:
        sys.exit("%s is not installed (swh-lv2; make deps)" % URI)
    workdir = tempfile.mkdtemp(prefix="tandem-render-bench-")
    log("work folder %s" % workdir)
    started = datetime.datetime.now(datetime.timezone.utc)
    env = dict(os.environ)
    if args.amp_bundle_only:
        env["LV2_PATH"] = amp_bundle_only(tandem, workdir)
        log("LV2_PATH=%s" % env["LV2_PATH"])

    tools = ["tandem", "ecasound"]
    rows = []
    for c in widths:
        inp = os.path.join(workdir, "in-%dch.wav" % c)
        make_input(inp, c, frames, seed=c)
        # One cycle of input: what a run costs before and after the audio (start-up, plugin scan, shut-down).
        tiny = os.path.join(workdir, "tiny-%dch.wav" % c)
        make_input(tiny, c, PERIOD, seed=c)
        for n in counts:
            best = {t: None for t in tools}
            cpu_of_best = {t: None for t in tools}
            setup = {t: None for t in tools}
            first = {}
            for r in range(rounds):
                for tool in (tools if r % 2 == 0 else tools[::-1]):
                    out = os.path.join(workdir, "%s-%dch-%d-r%d.wav" % (tool, c, n, r))
                    wall, cpu = run_tool(tool, tandem, n, c, args.gain, inp, out, env)
                    out_tiny = os.path.join(workdir, "%s-%dch-%d-r%d-tiny.wav" % (tool, c, n, r))
                    fixed, _ = run_tool(tool, tandem, n, c, args.gain, tiny, out_tiny, env)
                    remove_output(tool, out_tiny)
                    log("%-8s %2d ch, %2d plugin(s), round %d: %.3f s wall (%.3f s cpu); one cycle alone %.3f s"
                        % (tool, c, n, r + 1, wall, cpu, fixed))
                    if best[tool] is None or wall < best[tool]:
                        best[tool], cpu_of_best[tool] = wall, cpu
                    setup[tool] = fixed if setup[tool] is None else min(setup[tool], fixed)
                    if r == 0:
                        first[tool] = out
                    else:
                        remove_output(tool, out)
            found = compare(inp, first["tandem"], first["ecasound"], c, n * args.gain)
            if found.get("problem"):
                log("NOT THE SAME CHAIN? %d ch, %d plugin(s): %s" % (c, n, found["problem"]))
            if not args.keep:
                for tool in tools:
                    remove_output(tool, first[tool])
            rows.append({"channels": c, "plugins": n, "wall": best, "cpu": cpu_of_best, "setup": setup, "found": found})

    batch = []
    if args.batch_inputs > 0:
        c, n = 2, args.batch_plugins
        src = os.path.join(workdir, "in-%dch.wav" % c)
        if not os.path.exists(src):
            make_input(src, c, frames, seed=c)
        inputs = []
        for k in range(args.batch_inputs):
            p = os.path.join(workdir, "batch-%d.wav" % (k + 1))
            shutil.copyfile(src, p)
            inputs.append(p)
        for jobs in (1, 2):
            best_wall, best_cpu = None, None
            for r in range(rounds):
                outdir = os.path.join(workdir, "batch-j%d-r%d" % (jobs, r))
                os.mkdir(outdir)
                wall, cpu = timed(tandem_argv(tandem, n, c, args.gain, outdir + "/{input}.wav", inputs, jobs=jobs), env)
                log("tandem batch of %d, --jobs %d, round %d: %.3f s wall, %.3f s cpu" % (len(inputs), jobs, r + 1, wall, cpu))
                if best_wall is None or wall < best_wall:
                    best_wall, best_cpu = wall, cpu
                shutil.rmtree(outdir)
            batch.append({"jobs": jobs, "wall": best_wall, "cpu": best_cpu})

    def xrt(wall, fixed=0.0):
        net = wall - fixed
        return "%.1f" % (seconds / net) if net > 0.005 * wall else "n/a"

    def ratio(a, b):
        return "%.2f" % (a / b) if a > 0 and b > 0 else "n/a"

    L = ["## `tandem render` vs ecasound, offline, the same LV2 chain", ""]
    if debug:
        L += ["**WARNING: timed with the DEBUG build (%s). Debug Swift is many times slower than release: these "
              "numbers mean nothing about Tandem's speed. `make release` and run again.**" % tandem, ""]
    L += ["%s, %s; machine: %s." % (started.strftime("%Y-%m-%d %H:%M UTC"), os.path.relpath(tandem, ROOT)
                                     if tandem.startswith(ROOT) else tandem, machine()),
          "%s; sox %s; %s; comparison with %s." % (
              version(["ecasound", "--version"]), version(["sox", "--version"]).split()[-1],
              "LV2_PATH: the amplifier's bundle alone" if args.amp_bundle_only else "every installed LV2 bundle "
              "(%d in /usr/lib/lv2)" % (len(os.listdir("/usr/lib/lv2")) if os.path.isdir("/usr/lib/lv2") else 0),
              "numpy" if np is not None else "Python (slow)"),
          "",
          "Input: %g s of white noise at %d Hz, float32 WAV, each channel its own stream. Chain: N x SWH amp (`%s`, "
          "mono, gain %g dB each) on every channel: Tandem runs a mono plugin on a C-channel path as C instances side "
          "by side (ChainLayout rule 1), ecasound as one instance per channel (ecasound(1), -elv2), so both run C x N "
          "instances, %d frames a cycle. Tandem with `--preroll 0 --tail 0` (its defaults add 1 s of silence before "
          "the input and a search for the end of a tail after it). Best of %d, the tools alternating which goes first. "
          "x real time = audio seconds / wall seconds of the whole process; \"start-up\" is the wall time of the same "
          "command over one cycle of input (start, plugin scan and instantiation, shut-down; ecasound loads every LV2 "
          "bundle on LV2_PATH), and \"net\" leaves it out (n/a: within the noise of the start-up). CPU s: user + "
          "system time of the best run, children included. Ratio > 1: Tandem faster."
          % (seconds, RATE, URI, args.gain, PERIOD, rounds), "",
          "| channels | plugins | instances | tandem x RT | ecasound x RT | ratio | tandem start-up s | ecasound start-up s "
          "| tandem net x RT | ecasound net x RT | net ratio | tandem CPU s | ecasound CPU s | max abs difference "
          "| same chain |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    problems = []
    for row in rows:
        f, w, s0 = row["found"], row["wall"], row["setup"]
        same = "yes" if not f.get("problem") else "**no**"
        if f.get("problem"):
            problems.append("%d ch, %d plugin(s): %s" % (row["channels"], row["plugins"], f["problem"]))
        net_t, net_e = w["tandem"] - s0["tandem"], w["ecasound"] - s0["ecasound"]
        L.append("| %d | %d | %d | %s | %s | %s | %.3f | %.3f | %s | %s | %s | %.3f | %.3f | %s | %s |" % (
            row["channels"], row["plugins"], row["channels"] * row["plugins"], xrt(w["tandem"]), xrt(w["ecasound"]),
            ratio(w["ecasound"], w["tandem"]), s0["tandem"], s0["ecasound"], xrt(w["tandem"], s0["tandem"]),
            xrt(w["ecasound"], s0["ecasound"]),
            ratio(net_e, net_t) if net_t > 0.005 * w["tandem"] and net_e > 0.005 * w["ecasound"] else "n/a",
            row["cpu"]["tandem"], row["cpu"]["ecasound"], fmt_diff(f), same))
    L += ["", "Same chain: both outputs have the input's frame count, and on every channel both are N x %g dB below "
          "the input (within 0.05 dB), and they differ by at most 1e-5; the input's channels are distinct streams, "
          "so a channel that went elsewhere shows in the difference." % -args.gain]
    if problems:
        L += ["", "**Not equivalent where it says no:**", ""] + ["- " + p for p in problems]
    if batch:
        audio = args.batch_inputs * seconds
        L += ["", "### Tandem's batches: %d inputs of %g s, 2 channels, %d plugin(s)" % (args.batch_inputs, seconds,
                                                                                      args.batch_plugins), "",
              "| --jobs | wall s | x real time (all inputs) | CPU s | speed-up |", "|---|---|---|---|---|"]
        for b in batch:
            L.append("| %d | %.3f | %.1f | %.3f | %.2f |" % (b["jobs"], b["wall"], audio / b["wall"], b["cpu"],
                                                           batch[0]["wall"] / b["wall"]))
        L += ["", "%d CPU(s) here. Several inputs run isolated by default: each job is its own `tandem render --job` "
              "process, start-up included." % (os.cpu_count() or 0)]
    print("\n".join(L))
    if args.keep:
        log("kept %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
