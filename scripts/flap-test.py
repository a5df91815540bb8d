#!/usr/bin/env python3
"""Server flaps under load (issue 43, item A): `tandem run` with a recorder, an in-process rack and an isolated rack
on a private dummy JACK server, both cores kept busy, and the server flapped N rounds: killed, started, killed again
after a random 0.05-1.2 s (while the session restores itself on it), started. Each round checks that the tandem
process is alive, that it restored itself (the log says the server is back) and that it answers its status; at the
end every take's report must parse and say how the take ended. A crashed or hung process is counted, its last log
lines and exit signal kept, and a new one started so that the rounds go on.

    scripts/flap-test.py --rounds 20                      # the debug build, 2 busy loops
    scripts/flap-test.py --rounds 100 --load 0 --seed 7   # no load
    scripts/flap-test.py --rounds 50 --gdb                # under gdb: a crash prints every thread's backtrace
    scripts/flap-test.py --rounds 20 --kill-on 'recorder ready'   # the second kill in the middle of the restore

Exit status: 0 when every round passed, 1 when a crash or hang was seen, 2 on a setup problem.
Needs jackd (jackd2), jack_lsp and the eg-amp LV2 example plugin.
"""
import argparse, glob, json, os, random, re, signal, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
AMP = "http://lv2plug.in/plugins/eg-amp"


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Rig:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="tandem-flap-")
        self.name = "tflap-%d" % os.getpid()
        self.env = dict(os.environ, JACK_DEFAULT_SERVER=self.name, JACK_NO_START_SERVER="1",
                        JACK_NO_AUDIO_RESERVATION="1")
        self.jackd = None
        self.tandem = None
        self.log_path = None
        self.runs = 0
        self.control_port = free_port(socket.SOCK_DGRAM)
        self.http_port = free_port(socket.SOCK_STREAM)
        self.preset = os.path.join(self.work, "flap.toml")
        with open(self.preset, "w") as f:
            f.write('[session]\nname = "flap"\ndirectory = "%s"\ncontrol_port = %d\nhttp = "127.0.0.1:%d"\n'
                    'on_server_loss = "resume"\n'
                    '[recorder]\nchannels = 2\nclient = "flap-rec"\nstart = "immediately"\n'
                    '[[rack]]\nname = "ins"\nclient = "flap-ins"\nisolate = false\ninputs = 1\n'
                    '[[rack.plugins]]\nuri = "%s"\n'
                    '[[rack]]\nname = "iso"\nclient = "flap-iso"\nisolate = true\ninputs = 1\n'
                    '[[rack.plugins]]\nuri = "%s"\n'
                    '[[connect]]\nfrom = "flap-ins:out_1"\nto = "flap-rec:in_1"\n'
                    '[[connect]]\nfrom = "flap-iso:out_1"\nto = "flap-rec:in_2"\n'
                    % (self.work, self.control_port, self.http_port, AMP, AMP))

    # The server.
    def start_server(self):
        self.jackd = subprocess.Popen(["jackd", "-n", self.name, "-R" if self.args.realtime else "-r", "-d", "dummy", "-r", "48000", "-p",
                                       str(self.args.period)], env=self.env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.jackd.poll() is not None:
                raise RuntimeError("jackd exited with %s" % self.jackd.returncode)
            if subprocess.run(["jack_lsp"], env=self.env, capture_output=True).returncode == 0:
                return
            time.sleep(0.02)
        raise RuntimeError("jackd did not become ready in 10 s")

    def kill_server(self, sig=signal.SIGKILL):
        if self.jackd and self.jackd.poll() is None:
            self.jackd.send_signal(sig)
            self.jackd.wait()

    # Tandem.
    def start_tandem(self):
        self.runs += 1
        self.log_path = os.path.join(self.work, "tandem-%d.log" % self.runs)
        argv = [self.args.tandem, "run", "--no-view", self.preset] + (["-v"] if self.args.verbose else [])
        if self.args.gdb:
            argv = ["gdb", "-q", "-batch", "-ex", "handle SIGPIPE SIGUSR1 SIGUSR2 SIGHUP SIGTERM SIGINT SIGCHLD "
                    "nostop noprint pass", "-ex", "run", "-ex", "thread apply all bt 30", "--args"] + argv
        self.tandem = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=open(self.log_path, "w"),
                                       stderr=subprocess.STDOUT, start_new_session=True)
        # Started whole (the HTTP API is the last thing a start opens): a loss before that is a failed first start.
        if not self.wait_log("HTTP API listening", 30, 0):
            raise RuntimeError("tandem did not start:\n" + self.log()[-3000:])

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_log(self, text, timeout, offset, poll=0.02):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log()[offset:]:
                return True
            if not self.alive():
                return False
            time.sleep(poll)
        return False

    def alive(self):
        if self.tandem.poll() is not None:
            return False
        if self.args.gdb:   # gdb stays up after a crash, printing the backtraces
            return "received signal" not in self.log()
        return True

    def status(self):
        try:
            out = subprocess.run([self.args.tandem, "status", "--port", str(self.control_port), "--json"],
                                 env=self.env, capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return None
        if out.returncode != 0:
            return None
        try:
            return json.loads(out.stdout)
        except ValueError:
            return None

    def stop_tandem(self, sig=signal.SIGTERM):
        if self.tandem.poll() is None:
            try:
                os.killpg(self.tandem.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.tandem.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.tandem.pid, signal.SIGKILL)
                self.tandem.wait()
        return self.tandem.returncode


def busy_loops(n):
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], stdin=subprocess.DEVNULL,
                             start_new_session=True) for _ in range(n)]


def main_thread_stack(pid):
    """Where a hung process's threads are, by gdb (the session's loop runs on the main thread)."""
    if not args_gdb_available():
        return None
    try:
        out = subprocess.run(["gdb", "-q", "-batch", "-p", str(pid), "-ex", "thread apply all bt 30"],
                             capture_output=True, text=True, timeout=60).stdout
    except subprocess.TimeoutExpired:
        return None
    return [l[:200] for l in out.splitlines() if re.match(r"(#\d+ |Thread \d+ )", l)]


def args_gdb_available():
    return subprocess.run(["sh", "-c", "command -v gdb"], capture_output=True).returncode == 0


def crash_summary(rig):
    text = rig.log()
    code = rig.tandem.poll()
    frames = [l for l in text.splitlines() if re.match(r"#\d+ ", l)]
    m = re.search(r"received signal (\S+)", text)
    return {"exit": code, "signal": m.group(1) if m else None,
            "backtrace": frames[:40] if frames else None, "tail": text.splitlines()[-12:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--load", type=int, default=2, help="busy loops beside the run (default 2: both cores)")
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "debug", "tandem"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--period", type=int, default=256)
    ap.add_argument("--min-gap", type=float, default=0.05, help="shortest time the server lives between kills")
    ap.add_argument("--max-gap", type=float, default=1.2)
    ap.add_argument("--timeout", type=float, default=20, help="seconds a restore may take before it is a hang")
    ap.add_argument("--kill-on", metavar="TEXT", help="kill the restarted server as soon as tandem logs TEXT (e.g. "
                    "'recorder ready': in the middle of a restore) instead of after a random time")
    ap.add_argument("--realtime", action="store_true", help="run jackd with -R (real-time scheduling)")
    ap.add_argument("--gdb", action="store_true", help="run tandem under gdb (backtraces of a crash)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--verbose", action="store_true", help="run tandem with -v (libjack's messages in its log)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    rnd = random.Random(seed)
    subprocess.run([os.path.join(ROOT, "scripts", "clean-jack-shm.sh")], capture_output=True)
    rig = Rig(args)
    load = []
    crashes, hangs, status_misses, rounds = [], [], 0, 0
    restore_times = []
    t0 = time.monotonic()
    try:
        rig.start_server()
        rig.start_tandem()
        load = busy_loops(args.load)
        for n in range(1, args.rounds + 1):
            rounds = n
            gap = rnd.uniform(args.min_gap, args.max_gap)
            rig.kill_server()
            mark = len(rig.log())
            rig.start_server()
            if args.kill_on:   # the second kill as soon as the restore has got this far
                rig.wait_log(args.kill_on, args.timeout, mark, poll=0.002)
            else:
                time.sleep(gap)
            rig.kill_server()
            offset = len(rig.log())
            rig.start_server()
            started = time.monotonic()
            back = rig.wait_log("JACK server is back: clients", args.timeout, offset)
            if back:
                restore_times.append(time.monotonic() - started)
            st = rig.status() if rig.alive() else None
            if not rig.alive():
                c = crash_summary(rig)
                c.update(round=n, gap=round(gap, 3))
                crashes.append(c)
                print("round %d (gap %.2f s): CRASH %s" % (n, gap, c["signal"] or c["exit"]), flush=True)
                rig.stop_tandem(signal.SIGKILL)
                rig.start_tandem()
                continue
            if not back or st is None:
                hangs.append({"round": n, "gap": round(gap, 3), "back": back, "status": st is not None,
                              "tail": rig.log().splitlines()[-12:], "mainThread": main_thread_stack(rig.tandem.pid)})
                print("round %d (gap %.2f s): HANG (back %s, status %s)" % (n, gap, back, st is not None), flush=True)
                rig.stop_tandem(signal.SIGKILL)
                rig.start_tandem()
                continue
            print("round %d (gap %.2f s): ok, restored in %.2f s" % (n, gap, restore_times[-1]), flush=True)
        final_exit = rig.stop_tandem()
    finally:
        for p in load:
            p.kill()
            p.wait()
        if rig.tandem and rig.tandem.poll() is None:
            rig.stop_tandem(signal.SIGKILL)
        # The last server stopped cleanly: a killed one keeps its slot in JACK's registry of 8 ("Too many servers").
        rig.kill_server(signal.SIGTERM)
    # Every take's report parses and says how the take ended.
    reports = sorted(glob.glob(os.path.join(rig.work, "*.json")))
    bad = []
    for path in reports:
        try:
            with open(path) as f:
                r = json.load(f)
            if not r.get("ended"):
                bad.append((os.path.basename(path), "no 'ended'"))
        except (ValueError, OSError) as e:
            bad.append((os.path.basename(path), str(e)))
    summary = {"rounds": rounds, "seed": seed, "load": args.load, "crashes": len(crashes), "hangs": len(hangs),
               "reports": len(reports), "badReports": bad, "finalExit": final_exit,
               "restoreSeconds": {"max": round(max(restore_times), 2), "mean": round(sum(restore_times) /
                                  len(restore_times), 2)} if restore_times else None,
               "seconds": round(time.monotonic() - t0, 1), "work": rig.work,
               "crashDetails": crashes, "hangDetails": hangs}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        for c in crashes:
            print("crash in round %d (gap %.2f s): signal %s, exit %s" % (c["round"], c["gap"], c["signal"], c["exit"]))
            for line in (c["backtrace"] or c["tail"]):
                print("    " + line[:200])
        for h in hangs:
            print("hang in round %d (gap %.2f s): restored %s, status answered %s" % (h["round"], h["gap"], h["back"],
                                                                                 h["status"]))
            for line in h["tail"] + ["threads:"] + (h["mainThread"] or ["(no backtrace)"]):
                print("    " + line[:200])
        for name, why in bad:
            print("report %s: %s" % (name, why))
        print("flap: %d rounds (seed %d, load %d), %d crashes, %d hangs, %d reports (%d bad), final exit %s, "
              "restore %s, %.0f s; files in %s" % (rounds, seed, args.load, len(crashes), len(hangs), len(reports),
                                                   len(bad), final_exit, summary["restoreSeconds"],
                                                   summary["seconds"], rig.work))
    return 1 if crashes or hangs or bad or final_exit != 0 else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as e:
        print("flap-test: %s" % e, file=sys.stderr)
        sys.exit(2)
