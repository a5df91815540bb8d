#!/usr/bin/env python3
"""The HTTP API under load, on this machine (docs/HTTP.md, docs/RELIABILITY.md "HTTP API").

A private dummy JACK server at period 64; one Tandem session: a player looping a 16-channel ramp straight into a
16-channel recorder, and a rack with eg-amp (gain in dB) on the player's first channel, recorded as a 17th channel.
Three phases of SECONDS each, every one a take checked sample by sample against the ramp:

  baseline   no HTTP clients
  load       50 WebSocket clients reading meters at 30 a second, and 200 GET /api/status a second
  roundtrip  the load, plus a control change (eg-amp's gain, 0 dB <-> -6 dB) every 0.1 s over HTTP: the JACK frame
             at which the request was sent (jack_frame_time of a client of our own) against the first frame of the
             take at which the rack's output changed, in samples

For each phase: Tandem's CPU (utime + stime from /proc), the take's xruns, missed and dropped frames, whether the
take is bit-exact, the requests answered and their latency; for the load, Tandem's extra CPU per client.

    bench/http_load.py [--seconds 20] [--binary .build/debug/tandem] [--period 64]

No library beyond Python's own and numpy; the WebSocket client is a few lines over asyncio.
"""
import argparse
import asyncio
import base64
import ctypes
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHANNELS = 16
RAMP = 48000
EG_AMP = "http://lv2plug.in/plugins/eg-amp"


def ramp_value(i, ch):
    return ((i + ch * 1009) % RAMP) - RAMP // 2


def write_ramp(path):
    frames = np.arange(RAMP)
    data = np.stack([((frames + ch * 1009) % RAMP) - RAMP // 2 for ch in range(CHANNELS)], axis=1).astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(CHANNELS)
        w.setsampwidth(2)
        w.setframerate(48000)
        w.writeframes(data.tobytes())
    return data.astype(np.float32) / 32768.0


def read_float_wav(path):
    """A float32 (or RF64/WAVE_FORMAT_EXTENSIBLE float) WAV as frames x channels."""
    with open(path, "rb") as f:
        raw = f.read()
    pos = 12
    channels = None
    while pos + 8 <= len(raw):
        cid, size = raw[pos:pos + 4], struct.unpack("<I", raw[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"fmt ":
            channels = struct.unpack("<H", raw[body + 2:body + 4])[0]
        if cid == b"data":
            if size == 0xFFFFFFFF:
                size = len(raw) - body
            samples = np.frombuffer(raw[body:body + size - size % (4 * channels)], dtype="<f4")
            return samples.reshape(-1, channels)
        pos = body + size + (size & 1)
    raise ValueError(f"no data chunk in {path}")


class Jack:
    """jack_frame_time from a client of our own (the frame clock the rack and recorder run on)."""

    def __init__(self, server):
        self.lib = ctypes.CDLL("libjack.so.0")
        self.lib.jack_client_open.restype = ctypes.c_void_p
        self.lib.jack_frame_time.restype = ctypes.c_uint32
        self.lib.jack_frame_time.argtypes = [ctypes.c_void_p]
        status = ctypes.c_int(0)
        self.client = self.lib.jack_client_open(b"httpload-clock", 5, ctypes.byref(status), server.encode())
        if not self.client:
            raise RuntimeError(f"jack_client_open failed ({status.value})")
        self.lib.jack_activate.argtypes = [ctypes.c_void_p]
        self.lib.jack_activate(self.client)

    def frame(self):
        return self.lib.jack_frame_time(self.client)

    def close(self):
        self.lib.jack_client_close.argtypes = [ctypes.c_void_p]
        self.lib.jack_client_close(self.client)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def http(port, method, path, body=None, reader_writer=None):
    """One request on a kept-alive connection (opened when `reader_writer` is None); returns (status, body, rw)."""
    if reader_writer is None:
        reader_writer = await asyncio.open_connection("127.0.0.1", port)
    reader, writer = reader_writer
    data = json.dumps(body).encode() if body is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(data)}\r\n"
    if body is not None:
        head += "Content-Type: application/json\r\n"
    writer.write(head.encode() + b"\r\n" + data)
    await writer.drain()
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
    payload = await reader.readexactly(length) if length else b""
    return status, payload, reader_writer


async def websocket_client(port, rate, stop, counts):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /api/events?meters={rate} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    await writer.drain()
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    try:
        while not stop.is_set():
            header = await reader.readexactly(2)
            length = header[1] & 0x7F
            if length == 126:
                length = struct.unpack(">H", await reader.readexactly(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", await reader.readexactly(8))[0]
            await reader.readexactly(length)
            if header[0] & 0x0F == 1:
                counts["frames"] += 1
    except (asyncio.IncompleteReadError, ConnectionError):
        counts["closed"] += 1
    finally:
        writer.close()


async def status_load(port, per_second, stop, counts, latencies):
    connections = 4
    interval = connections / per_second

    async def worker(k):
        rw = None
        next_at = time.monotonic() + k * interval / connections
        while not stop.is_set():
            await asyncio.sleep(max(0, next_at - time.monotonic()))
            next_at += interval
            began = time.monotonic()
            try:
                status, _, rw = await http(port, "GET", "/api/status", reader_writer=rw)
            except (ConnectionError, asyncio.IncompleteReadError, ValueError):
                rw = None
                counts["failed"] += 1
                continue
            latencies.append(time.monotonic() - began)
            counts["ok" if status == 200 else "failed"] += 1

    await asyncio.gather(*(worker(k) for k in range(connections)))


async def control_changes(port, jack, stop, sent):
    rw = None
    gain = 0.0
    while not stop.is_set():
        await asyncio.sleep(0.1)
        gain = -6.0 if gain == 0.0 else 0.0
        frame = jack.frame()
        status, _, rw = await http(port, "PUT", "/api/engines/rt/plugins/amp/controls/gain", {"value": gain},
                                   reader_writer=rw)
        if status == 200:
            sent.append((frame, gain))


async def phase(port, seconds, pid, load, jack=None):
    stop = asyncio.Event()
    counts = {"frames": 0, "closed": 0, "ok": 0, "failed": 0}
    latencies, sent, tasks = [], [], []
    if load:
        tasks += [asyncio.create_task(websocket_client(port, 30, stop, counts)) for _ in range(50)]
        tasks.append(asyncio.create_task(status_load(port, 200, stop, counts, latencies)))
    if jack:
        tasks.append(asyncio.create_task(control_changes(port, jack, stop, sent)))
    await asyncio.sleep(1)   # clients connected and running
    status, _, rw = await http(port, "POST", "/api/recorder/start")
    assert status == 200, status
    rw[1].close()
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    await asyncio.sleep(seconds)
    cpu = (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
    status, _, rw = await http(port, "POST", "/api/recorder/stop")
    rw[1].close()
    stop.set()
    await asyncio.sleep(0.5)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return cpu, counts, latencies, sent


def check_take(report_path, source, period):
    """The take against the ramp, frame by frame: every frame must be a frame of the ramp (all 16 channels exact), in
    order; where the order jumps (cycles the JACK server did not run: the dummy driver's timer late on this VM, upstream
    of every client), the jumps must add up to the frames the take's report counts as missed. Returns the report, the
    frames, whether every frame is the ramp's and every jump accounted, and the figures."""
    with open(report_path) as f:
        report = json.load(f)
    frames = read_float_wav(report["chunks"][0]["files"][0]) if len(report["chunks"]) == 1 else np.concatenate(
        [read_float_wav(c["files"][0]) for c in report["chunks"]])
    # Each frame's place in the ramp, from its first channel; then every channel must be the ramp's at that place.
    position = (np.rint(frames[:, 0] * 32768).astype(np.int64) + RAMP // 2) % RAMP
    foreign = int(np.count_nonzero(np.any(frames[:, :CHANNELS] != source[position], axis=1)))
    # Signed: a period repeated shows as a step back, one skipped as a step forward.
    step = ((np.diff(position) - 1 + RAMP // 2) % RAMP) - RAMP // 2
    where = np.nonzero(step)[0]
    jumps = len(where)
    skipped = int(step.sum())
    if jumps:
        print(f"  {os.path.basename(report_path)}: jumps at frames {where[:8].tolist()} of {step[where][:8].tolist()} frames",
              flush=True)
    missed = int(report.get("missedFrames", 0))
    # Bit-exact: every frame is the ramp's and in order. Where the server ran a cycle late (its xruns), JACK hands a
    # period on one cycle early or late upstream of every client: whole periods, counted as xruns in the report.
    exact = foreign == 0 and jumps == 0
    whole = foreign == 0 and all(int(x) % period == 0 for x in step[where])
    figures = {"foreign": foreign, "jumps": jumps, "skipped": skipped, "whole_periods": whole, "missed_report": missed}
    return report, frames, exact, figures


def change_latencies(report, frames, sent):
    """For each control change sent: samples from its send (JACK frame) to the first take frame where the rack's
    output (channel 17 = ramp channel 1 times the gain) shows the new gain."""
    start = report["startFrameTime"]
    ramp = frames[:, 0].astype(np.float64)
    out = frames[:, CHANNELS].astype(np.float64)
    gains = {0.0: 1.0, -6.0: 10 ** (-6 / 20)}
    result = []
    for frame, gain in sent:
        at = (frame - start) & 0xFFFFFFFF
        if at >= 2 ** 31 or at >= len(frames):
            continue
        want = gains[gain]
        window = slice(at, min(len(frames), at + 48000))
        loud = np.abs(ramp[window]) > 0.01
        ratio = np.where(loud, out[window] / np.where(loud, ramp[window], 1), np.nan)
        hit = np.nonzero(np.abs(ratio - want) < 1e-4)[0]
        if len(hit):
            result.append(int(hit[0]))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/tandem"))
    ap.add_argument("--period", type=int, default=64)
    ap.add_argument("--no-realtime", dest="realtime", action="store_false",
                    help="run jackd without real-time scheduling (-r); by default -R, as a rig at period 64 runs")
    args = ap.parse_args()

    subprocess.run([os.path.join(ROOT, "scripts/clean-jack-shm.sh")], check=False)
    name = f"httpload-{os.getpid()}"
    work = tempfile.mkdtemp(prefix="tandem-httpload-")
    jackd = subprocess.Popen(["jackd", "-n", name, "-R" if args.realtime else "-r", "-d", "dummy", "-r", "48000", "-p", str(args.period)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    tandem = None
    try:
        ramp = os.path.join(work, "ramp.wav")
        source = write_ramp(ramp)
        port = random.randint(20000, 40000)
        connects = "\n".join(f'[[connect]]\nfrom = "hl-play:out_{k}"\nto = "hl-rec:in_{k}"\n' for k in range(1, CHANNELS + 1))
        preset = os.path.join(work, "load.toml")
        with open(preset, "w") as f:
            f.write(f"""[session]
name = "load"
directory = "{work}"
http = "127.0.0.1:{port}"
[recorder]
client = "hl-rec"
channels = {CHANNELS + 1}
sample = "float32"
start = "armed"
[player]
client = "hl-play"
channels = {CHANNELS}
queue = ["{ramp}"]
loop = "all"
[[rack]]
name = "rt"
client = "hl-rt"
isolate = false
inputs = 1
[[rack.plugins]]
uri = "{EG_AMP}"
name = "amp"
{connects}
[[connect]]
from = "hl-play:out_1"
to = "hl-rt:in_1"
[[connect]]
from = "hl-rt:out_1"
to = "hl-rec:in_{CHANNELS + 1}"
""")
        env = dict(os.environ, JACK_DEFAULT_SERVER=name, JACK_NO_START_SERVER="1")
        log = open(os.path.join(work, "run.log"), "w")
        tandem = subprocess.Popen([args.binary, "run", preset, "--no-view", "--control-port", "0"], env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        for _ in range(100):
            try:
                asyncio.run(http(port, "GET", "/api/status"))
                break
            except OSError:
                if tandem.poll() is not None:
                    sys.exit("tandem ended: " + open(os.path.join(work, "run.log")).read())
                time.sleep(0.1)
        jack = Jack(name)
        rows = []
        baseline_cpu = None
        for label, load, clock in [("baseline", False, None), ("load", True, None), ("roundtrip", True, jack)]:
            cpu, counts, latencies, sent = asyncio.run(phase(port, args.seconds, tandem.pid, load, clock))
            time.sleep(1)
            takes = sorted(p for p in os.listdir(work) if p.startswith("load-") and p.endswith(".json"))
            report, frames, exact, figures = check_take(os.path.join(work, takes[-1]), source, args.period)
            if baseline_cpu is None:
                baseline_cpu = cpu
            row = {"phase": label, "cpu": cpu, "seconds": len(frames) / 48000, "exact": exact,
                   "xruns": report["xruns"], "missed": report.get("missedFrames", 0), "repeated": report.get("repeatedFrames", 0), "dropped": report["droppedFrames"],
                   "ws_frames": counts["frames"], "ws_closed": counts["closed"], "status_ok": counts["ok"],
                   "status_failed": counts["failed"], **figures}
            if latencies:
                latencies.sort()
                row["status_p50_ms"] = 1000 * latencies[len(latencies) // 2]
                row["status_p99_ms"] = 1000 * latencies[int(len(latencies) * 0.99)]
            if sent:
                samples = sorted(change_latencies(report, frames, sent))
                if samples:
                    row["changes"] = len(samples)
                    row["change_p50"] = samples[len(samples) // 2]
                    row["change_p99"] = samples[int(len(samples) * 0.99)]
                    row["change_max"] = samples[-1]
            rows.append(row)
            print(json.dumps(row), flush=True)
        jack.close()
        load = next(r for r in rows if r["phase"] == "load")
        per_client = (load["cpu"] - baseline_cpu) / 50
        print()
        print(f"period {args.period}, {CHANNELS} channels recorded (+1 through the rack), {args.seconds:.0f} s per phase")
        print("| phase | Tandem CPU (s/s) | take (frames not the ramp's; jumps where the server ran no cycle) | xruns | missed/repeated (report) | dropped | WS frames | status req ok/failed | status p50/p99 ms | change → effect p50/p99/max (samples) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['phase']} | {r['cpu']:.3f} | {'bit-exact' if r['exact'] else ('ramp, whole periods' if r['whole_periods'] else 'DIFFERS')} "
                  f"{r['seconds']:.1f} s, {r['foreign']} foreign, {r['jumps']} jumps | "
                  f"{r['xruns']} | {r['missed']}/{r['repeated']} | {r['dropped']} | {r['ws_frames']} | {r['status_ok']}/{r['status_failed']} | "
                  + (f"{r['status_p50_ms']:.1f}/{r['status_p99_ms']:.1f}" if "status_p50_ms" in r else "–") + " | "
                  + (f"{r['change_p50']}/{r['change_p99']}/{r['change_max']} ({r['changes']} changes)" if "change_p50" in r else "–")
                  + " |")
        print(f"\nTandem's extra CPU per WebSocket client at 30 meter frames/s (with 200 status/s shared): "
              f"{per_client * 1000:.2f} ms/s ({per_client * 100:.3f} % of a core)")
        ok = all((r["exact"] or r["whole_periods"]) and r["dropped"] == 0 for r in rows)
        sys.exit(0 if ok else 1)
    finally:
        if tandem:
            tandem.send_signal(signal.SIGTERM)
            try:
                tandem.wait(timeout=15)
            except subprocess.TimeoutExpired:
                tandem.kill()
        jackd.terminate()
        jackd.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
