#!/usr/bin/env python3
"""Crash loops beside a recording: the acceptance measurement of issue 35 (docs/PRESETS.md "Isolation").

A private dummy JACK server at period 256 (real-time, -R; -r when this machine refuses it); one Tandem session: a
player looping a 2-channel ramp straight into a recorder (direct JACK links, no plugin on that path), and four
isolated racks (`isolate = true`), each running Tandem's test plugin `http://tandem.test/lv2/crash` told to abort
(mode 2), fed from the player. Every process of a rack ends in SIGABRT, and the session's supervisor starts
it again (at once, then every 5 s once it went down more than five times in a minute): four crash loops. For each
run the take is recorded for SECONDS and checked frame by frame against the ramp:

  every frame of the take must be the ramp's frame that follows the one before it; where it is not, the report must
  count it: a frame not the ramp's inside a silent gap of `drops` (an overrun), a jump in the ramp where `drops`
  notes skipped (`missed-cycles`) or repeated (`repeated-cycle`) cycles, within one period of the jump.

What is left is "not counted": a frame the take holds that is neither the source's nor said to be missing. The
report counts the server's time, not the player's: a cycle the server skipped for every client leaves the ramp whole
(the player went on where it stopped) and is still a gap of the take, so the check is also a balance: the report's
missed less repeated frames equal the ramp's net jump plus the frames the player missed (from the session's status).

The comparison: the same session without its recorder, `jack_capture` recording the player's two ports to a float
WAV (started before the window, stopped with SIGINT after), checked the same way; jack_capture writes no report, so
there everything that differs is listed and nothing is counted (its xruns come from its close hook).

    bench/crash_loop.py [--seconds 30] [--runs 3] [--binary .build/release/tandem] [--abort start|live]

--abort start: the preset sets mode 2, so each process aborts in its warm-up call on its main thread, before its
client is activated (the crash plugin as a preset or a restored state would leave it). --abort live: the racks start
with mode 0 and this script sets mode 2 over the session's HTTP API as soon as a process says it is ready, so each
process aborts on JACK's process thread of an active client, and the server has to remove a dead client from the
running graph (mode 2 is never saved: the process dies in the first cycle that has it).

The ramp is 10 s long, so a jump of up to 5 s either way is told apart: channel 1 holds the frame's place within
its second (frame % 48000 - 24000), channel 2 its second and place (second * 4096 + frame % 4096 - 20480); both
are 16-bit values, exact in float32. The test plugin is compiled with cc into a temporary LV2 bundle as the tests'
`TestPlugins` builds it (LV2_PATH points there). No library beyond Python's own and numpy.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 48000
RAMP = 10 * RATE
CRASH = "http://tandem.test/lv2/crash"
RACKS = 4


def ramp_frames(n):
    """The ramp at frames 0..n-1 (modulo its length), as int16 values, frames x 2."""
    i = np.arange(n) % RAMP
    second, place = i // RATE, i % RATE
    return np.stack([place - RATE // 2, second * 4096 + place % 4096 - 20480], axis=1).astype("<i2")


def write_ramp(path):
    data = ramp_frames(RAMP)
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(data.tobytes())
    return data.astype(np.float32) / 32768.0


def read_float_wav(path):
    """A float32 WAV (plain, RF64 or WAVE_FORMAT_EXTENSIBLE) as frames x channels."""
    with open(path, "rb") as f:
        raw = f.read()
    pos = 12
    channels = None
    while pos + 8 <= len(raw):
        cid, size = raw[pos:pos + 4], struct.unpack("<I", raw[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"fmt ":
            fmt, channels = struct.unpack("<HH", raw[body:body + 4])
            bits = struct.unpack("<H", raw[body + 14:body + 16])[0]
            if bits != 32 or fmt not in (3, 0xFFFE):
                raise ValueError(f"{path}: not float32 (format {fmt}, {bits} bits)")
        if cid == b"data":
            if size == 0xFFFFFFFF or body + size > len(raw):
                size = len(raw) - body
            samples = np.frombuffer(raw[body:body + size - size % (4 * channels)], dtype="<f4")
            return samples.reshape(-1, channels)
        pos = body + size + (size & 1)
    raise ValueError(f"no data chunk in {path}")


def check(frames, source, drops, period):
    """The take against the ramp, frame by frame. `drops`: the report's gaps (None: no report). Returns the figures:
    frames not the ramp's and jumps, each split into counted (located by a gap of the report) and not counted."""
    n = len(frames)
    ch0 = np.rint(frames[:, 0].astype(np.float64) * 32768).astype(np.int64)
    ch1 = np.rint(frames[:, 1].astype(np.float64) * 32768).astype(np.int64)
    position = np.clip((ch1 + 20480) // 4096, 0, 9) * RATE + (ch0 + RATE // 2) % RATE
    foreign_mask = np.any(frames[:, :2] != source[position % RAMP], axis=1)
    good = np.nonzero(~foreign_mask)[0]
    # Between two of the ramp's frames i < j, the ramp must have moved on by j - i (a silent gap stands in for the
    # frames it replaces, so the timeline goes on through it); the signed difference is a jump: + frames skipped,
    # - frames repeated.
    step = ((np.diff(position[good]) - np.diff(good) + RAMP // 2) % RAMP) - RAMP // 2
    at = np.nonzero(step)[0]
    jumps = [(int(good[k + 1]), int(step[k])) for k in at]   # (first frame after the jump, its size)
    silent = [(d["atFrame"], d["atFrame"] + d["frames"]) for d in (drops or [])
              if d.get("silence", True) and d.get("cause", "overrun") == "overrun"]
    skips = [d for d in (drops or []) if d.get("silence") is False]
    foreign = np.nonzero(foreign_mask)[0]
    foreign_counted = sum(int(np.count_nonzero((foreign >= a) & (foreign < b))) for a, b in silent)
    jumps_counted, frames_counted = 0, 0
    for frame, size in jumps:
        near = [d for d in skips if abs(d["atFrame"] - frame) <= period
                and (d["cause"] == "missed-cycles") == (size > 0)]
        if near:
            jumps_counted += 1
            frames_counted += abs(size)
    runs = []   # stretches of frames not the ramp's: (first frame, length), for the log
    if len(foreign):
        breaks = np.nonzero(np.diff(foreign) != 1)[0]
        starts = np.concatenate([[foreign[0]], foreign[breaks + 1]])
        ends = np.concatenate([foreign[breaks], [foreign[-1]]])
        runs = [(int(s), int(e - s + 1)) for s, e in zip(starts, ends)]
    return {"frames": n, "foreign": int(len(foreign)), "foreign_counted": foreign_counted,
            "foreign_runs": runs[:8], "jumps": len(jumps), "jumps_counted": jumps_counted,
            "jump_list": jumps[:8], "net_skipped": int(step.sum()), "jump_frames": int(np.abs(step).sum()),
            "jump_frames_counted": frames_counted,
            "leading_silence": int(np.argmax(np.any(frames[:, :2] != 0, axis=1))) if n else 0}


class Session:
    """One `tandem run` and its HTTP API."""

    def __init__(self, binary, preset, port, env, log_path):
        self.port = port
        self.server = env["JACK_DEFAULT_SERVER"]
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([binary, "run", preset, "--no-view", "--control-port", "0"], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            try:
                self.status()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("tandem ended: " + open(log_path).read()[-3000:])
                time.sleep(0.1)
        raise RuntimeError("tandem's HTTP API did not answer in 20 s")

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if body is not None else {}
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def status(self):
        code, body = self.request("GET", "/api/status")
        if code != 200:
            raise OSError(f"status {code}")
        return json.loads(body)

    def racks(self):
        s = self.status()
        return {r["name"]: r for r in s.get("racks", [])}, s

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        # Rack processes end with their session (PR_SET_PDEATHSIG); any still here is a finding, and goes.
        time.sleep(0.5)
        left = rack_children(self.server)
        for p in left:
            os.kill(p, signal.SIGKILL)
        return left


def rack_children(server):
    """Live `tandem rack --child` processes joined to JACK server `server` (by their command line or environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
            if b"--child" not in cmd or b"rack" not in cmd:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (f"JACK_DEFAULT_SERVER={server}".encode() in environ or server.encode() in cmd):
            found.append(int(entry))
    return found


class Aborter(threading.Thread):
    """--abort live: sets each rack's crash plugin to mode 2 over HTTP as soon as its process is ready."""

    def __init__(self, session):
        super().__init__(daemon=True)
        self.session = session
        self.stop_event = threading.Event()
        self.told = set()
        self.replies = {}   # answer (status, or the error) -> how many

    def run(self):
        while not self.stop_event.is_set():
            try:
                racks, _ = self.session.racks()
            except (OSError, ValueError):
                time.sleep(0.05)
                continue
            for name, r in racks.items():
                key = (name, r.get("pid"))
                if r.get("running") and r.get("pid") and key not in self.told:
                    self.told.add(key)
                    try:
                        code, body = self.session.request("PUT", f"/api/engines/{name}/plugins/crash/controls/mode",
                                                          {"value": 2})
                        answer = str(code) if code == 200 else f"{code} {body.decode(errors='replace')[:120]}"
                    except OSError as e:
                        answer = type(e).__name__
                    self.replies[answer] = self.replies.get(answer, 0) + 1
            time.sleep(0.05)


def build_plugin(work):
    """The test bundle, compiled as TestPlugins does; returns an LV2_PATH that finds it and the installed plugins."""
    src = os.path.join(ROOT, "Tests/Fixtures/lv2/tandem-test.lv2")
    bundle = os.path.join(work, "lv2", "tandem-test.lv2")
    os.makedirs(bundle)
    for f in ["manifest.ttl", "tandem-test.ttl"]:
        shutil.copy(os.path.join(src, f), bundle)
    for name in ["tandem-test", "tandem-broken"]:
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-o", os.path.join(bundle, f"{name}.so"),
                        os.path.join(src, f"{name}.c")], check=True)
    return os.path.join(work, "lv2") + ":/usr/lib/lv2:/usr/local/lib/lv2"


def start_jackd(name, period):
    """A private dummy server, real-time if this machine allows it. Returns the process and the flag used."""
    for flag in ["-R", "-r"]:
        p = subprocess.Popen(["jackd", "-n", name, flag, "-d", "dummy", "-r", str(RATE), "-p", str(period)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        if p.poll() is None:
            return p, flag
    raise RuntimeError("jackd would not start")


def write_preset(path, work, ramp, port, recorder, abort):
    racks = "".join(f"""
[[rack]]
name = "crash{k}"
client = "cl-crash{k}"
isolate = true
inputs = 1
[[rack.plugins]]
uri = "{CRASH}"
name = "crash"
controls = {{ mode = {2 if abort == "start" else 0} }}
[[connect]]
from = "cl-play:out_{(k - 1) % 2 + 1}"
to = "cl-crash{k}:in_1"
""" for k in range(1, RACKS + 1))
    rec = """[recorder]
client = "cl-rec"
channels = 2
sample = "float32"
start = "armed"
[[connect]]
from = "cl-play:out_1"
to = "cl-rec:in_1"
[[connect]]
from = "cl-play:out_2"
to = "cl-rec:in_2"
""" if recorder else ""
    with open(path, "w") as f:
        f.write(f"""[session]
name = "crash"
directory = "{work}"
http = "127.0.0.1:{port}"
on_plugin_error = "fail"
[player]
client = "cl-play"
channels = 2
queue = ["{ramp}"]
loop = "all"
{rec}{racks}""")


def wait_for(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if predicate():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def one_run(args, run, recorder, source, ramp, lv2_path, work):
    """One run: a fresh server and session, SECONDS recorded by `recorder` ("tandem" or "jack_capture")."""
    name = f"crashloop-{os.getpid()}-{run}-{recorder[0]}"
    folder = os.path.join(work, f"run{run}-{recorder}")
    os.makedirs(folder)
    jackd, rt = start_jackd(name, args.period)
    session = capture = aborter = None
    row = {"run": run, "recorder": recorder, "jackd": rt}
    try:
        port = random.randint(20000, 40000)
        preset = os.path.join(folder, "crash.toml")
        write_preset(preset, folder, ramp, port, recorder == "tandem", args.abort)
        env = dict(os.environ, JACK_DEFAULT_SERVER=name, JACK_NO_START_SERVER="1", LV2_PATH=lv2_path)
        session = Session(args.binary, preset, port, env, os.path.join(folder, "run.log"))
        wait_for(lambda: session.status()["player"]["playing"], 20, "the player")
        if args.abort == "live":
            aborter = Aborter(session)
            aborter.start()
        # Every rack has gone down at least once: the loops are running.
        wait_for(lambda: all((r.get("crashes") or 0) >= 1 for r in session.racks()[0].values())
                 and len(session.racks()[0]) == RACKS, 30, "a crash of every rack")
        time.sleep(1)
        racks0, s0 = session.racks()
        if recorder == "tandem":
            code, body = session.request("POST", "/api/recorder/start")
            assert code == 200, (code, body)
        else:
            hook = os.path.join(folder, "close-hook.sh")
            with open(hook, "w") as f:
                f.write(f'#!/bin/sh\necho "$@" > "{folder}/jack_capture.closed"\n')
            os.chmod(hook, 0o755)
            wav = os.path.join(folder, "capture.wav")
            capture = subprocess.Popen(["jack_capture", "--no-stdin", "--disable-console", "-c", "2",
                                        "-p", "cl-play:out_1", "-p", "cl-play:out_2", "--hook-close", hook, wav],
                                       env=env, stdout=open(os.path.join(folder, "jack_capture.log"), "w"),
                                       stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        time.sleep(args.seconds)
        if recorder == "tandem":
            code, body = session.request("POST", "/api/recorder/stop")
            assert code == 200, (code, body)
        else:
            capture.send_signal(signal.SIGINT)
            try:
                capture.wait(timeout=20)
            except subprocess.TimeoutExpired:
                capture.kill()
                capture.wait()
                row["note"] = "jack_capture did not end on SIGINT: killed"
        row["wall"] = time.monotonic() - t0
        racks1, s1 = session.racks()
        row["restarts"] = sum((racks1[k].get("restarts") or 0) - (racks0[k].get("restarts") or 0) for k in racks1)
        row["crashes"] = sum((racks1[k].get("crashes") or 0) - (racks0[k].get("crashes") or 0) for k in racks1)
        row["hangs"] = sum((racks1[k].get("hangs") or 0) - (racks0[k].get("hangs") or 0) for k in racks1)
        row["server_xruns"] = (s1.get("xruns") or 0) - (s0.get("xruns") or 0)
        p0, p1 = s0["player"], s1["player"]
        row["player_underrun"] = p1["underrunFrames"] - p0["underrunFrames"]
        row["player_missed"] = p1["missedFrames"] - p0["missedFrames"]
        if aborter:
            aborter.stop_event.set()
            aborter.join()
            row["abort_replies"] = aborter.replies
        if recorder == "tandem":
            report = None
            for _ in range(100):
                reports = [p for p in os.listdir(folder) if p.startswith("crash-") and p.endswith(".json")]
                if reports:
                    with open(os.path.join(folder, sorted(reports)[-1])) as f:
                        report = json.load(f)
                    if report.get("ended") != "recording":
                        break
                time.sleep(0.1)
            files = [c["files"][0] if c["files"][0].startswith("/") else os.path.join(folder, c["files"][0])
                     for c in report["chunks"]]
            frames = np.concatenate([read_float_wav(p) for p in files])
            row.update(check(frames, source, report["drops"], args.period))
            row.update({"xruns": report["xruns"], "missed": report.get("missedFrames", 0),
                        "repeated": report.get("repeatedFrames", 0), "dropped": report["droppedFrames"],
                        "drops": len(report["drops"]), "rack_incidents": len(report.get("rackIncidents") or []),
                        "report_frames": report["frames"], "ended": report["ended"]})
        else:
            frames = read_float_wav(os.path.join(folder, "capture.wav"))
            row.update(check(frames, source, None, args.period))
            closed = os.path.join(folder, "jack_capture.closed")
            wait_for(lambda: os.path.exists(closed), 5, "jack_capture's close hook")
            with open(closed) as f:
                words = f.read().split()
            row["xruns"] = int(words[1]) if len(words) > 1 else None
            row["io_errors"] = int(words[2]) if len(words) > 2 else None
    finally:
        if aborter:
            aborter.stop_event.set()
        if capture and capture.poll() is None:
            capture.kill()
            capture.wait()
        if session:
            left = session.stop()
            row["rack_processes_left"] = left
            row["session_exit"] = session.proc.returncode
            with open(session.log_path) as f:
                text = f.read()
            row["log_went_down"] = text.count("rack process went down")
        jackd.terminate()
        try:
            jackd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            jackd.kill()
            jackd.wait()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--period", type=int, default=256)
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/release/tandem"))
    ap.add_argument("--abort", choices=["start", "live"], default="start",
                    help="start: mode 2 in the preset (abort in the warm-up call, before activation); "
                         "live: mode 2 set over HTTP once each process is ready (abort on the process thread)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (takes, logs) and print its path")
    args = ap.parse_args()
    if not os.path.exists(args.binary):
        args.binary = os.path.join(ROOT, ".build/debug/tandem")

    subprocess.run([os.path.join(ROOT, "scripts/clean-jack-shm.sh")], check=False)
    work = tempfile.mkdtemp(prefix="tandem-crashloop-")
    rows = []
    try:
        lv2_path = build_plugin(work)
        ramp = os.path.join(work, "ramp.wav")
        source = write_ramp(ramp)
        for run in range(1, args.runs + 1):
            for recorder in ["tandem", "jack_capture"]:
                row = one_run(args, run, recorder, source, ramp, lv2_path, work)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"period {args.period}, {RATE} Hz, jackd {rows[0]['jackd'] if rows else '?'}, {RACKS} isolated racks "
          f"aborting ({args.abort}), {args.seconds:.0f} s per run, {args.binary}")
    print("| run | recorder | seconds | rack restarts (crashes) | frames | frames not the ramp's (counted) "
          "| jumps (counted) | counted by the report | xruns (recorder / server) |")
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    for r in rows:
        report = r["recorder"] == "tandem"
        uncounted = (r["foreign"] - r["foreign_counted"]) + (r["jumps"] - r["jumps_counted"])
        if report:
            # The report counts the server's time: cycles that skipped the player too left the ramp whole, so what
            # it says is missed (less repeated) must be the ramp's own net jump plus the player's missed frames.
            balance = r["missed"] - r["repeated"] == r["net_skipped"] + r["player_missed"]
            counted = (f"{r['drops']} gaps: missed {r['missed']} − repeated {r['repeated']} "
                       f"{'=' if balance else '≠'} ramp {r['net_skipped']} + player {r['player_missed']}; "
                       f"dropped {r['dropped']}; {uncounted} not counted")
            ok = ok and uncounted == 0 and balance and not r["rack_processes_left"]
        else:
            counted = "– (no report)"
        print(f"| {r['run']} | {r['recorder']} | {r['frames'] / RATE:.2f} | {r['restarts']} ({r['crashes']}) "
              f"| {r['frames']} | {r['foreign']}" + (f" ({r['foreign_counted']})" if report else "")
              + f" | {r['jumps']}" + (f" ({r['jumps_counted']})" if report else "")
              + f" | {counted} | {r['xruns']} / {r['server_xruns']} |")
    for r in rows:
        if r["recorder"] == "tandem":
            print(f"run {r['run']}: the ramp skipped {r['net_skipped']} frames net ({r['jump_frames']} in its jumps); "
                  f"the report: missed - repeated = {r['missed'] - r['repeated']}, {r['rack_incidents']} rack incidents; "
                  f"player underrun {r['player_underrun']}, missed {r['player_missed']}")
        else:
            print(f"run {r['run']} jack_capture: the ramp skipped {r['net_skipped']} frames net; leading silence "
                  f"{r['leading_silence']} frames; player underrun {r['player_underrun']}, missed {r['player_missed']}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
