#!/usr/bin/env python3
"""The HTTP API against its document: Sources/WebAPI/Resources/openapi.json checked with schemathesis against a running
`tandem run`.

It starts its own dummy JACK server (a unique name, 48 kHz, period 256), makes a session folder with a short WAV made by
sox, and runs a preset with a recorder taking from the start, a player looping that WAV through an in-process rack
(swh's amp, Ardour's a-eq and a-delay, and a second amp named `spare`) into the recorder. The names match the
document's examples (engine `fx`, plugin `amp`, control `gain`, ports `system:capture_1` and `tandem-rec:in_2`, the
queue file `media/jingle-1.wav`, the preset file `evening.toml`), so the examples reach the routes' success paths;
the document's links (takes, plugins, maps, presets) carry real ids into the stateful phase. The take routes are run
on the running take (its id and first file fixed, so the fuzzer works on byte ranges), and plugins are added as swh's
amp only (the installed list offers heavy and crashing ones; the plugin sweep is where those are tried).

schemathesis then runs every operation of the document FILE (not the copy the server serves, which changes only with a
rebuild) with the checks not_a_server_error, status_code_conformance, content_type_conformance and
response_schema_conformance, positive and negative data, --examples cases per operation (default 40: 2-4 minutes on 2
cores). Left out: the page (`/`, `/page/{file}`) and the WebSocket (`/api/events`); and operations of the document the
server does not serve yet (a route added to the document before the server has it): each operation with a path
parameter, or a GET, or a required body, is first asked once with a name no session has and no body, and one answered
"no METHOD PATH here" is left out and named.

Afterwards Tandem must still be running and recording: the status must answer, and a take must run (the fuzzer may have
stopped it with POST /api/recorder/stop: it is started again) and grow. Then SIGTERM, and Tandem must exit 0.

    scripts/api-check.py                              # the built debug binary, the document in the tree
    scripts/api-check.py --openapi /tmp/openapi.json --binary .build/release/tandem --examples 50 --seed 1
    scripts/api-check.py --keep                       # keep the session folder and the logs (printed)
    scripts/api-check.py --checks all --examples 20   # also negative_data_rejection, unsupported_method, ...

Installs schemathesis with pip when it is missing (nothing else). Exit status: 0 when every check passed and Tandem
survived; 1 on any failure; 3 when a tool it needs (jackd, jack_lsp, sox, the tandem binary) is missing or the setup
failed.
"""
import argparse, collections, glob, json, os, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.error, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
RATE, PERIOD = 48000, 256
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"
TOOLS = ["jackd", "jack_lsp", "sox"]
# Plugins of the rack (all in `make deps`: swh-lv2, and Ardour's a-* plugins from ardour-lv2-plugins or x42 where
# present; a missing one is left out of the rack and its examples then answer 404, which the document allows).
PLUGINS = [("amp", "http://plugin.org.uk/swh-plugins/amp", "gain = -6"),
           ("eq", "urn:ardour:a-eq", None),
           ("delay", "urn:ardour:a-delay", None),
           ("spare", "http://plugin.org.uk/swh-plugins/amp", None)]

# The document's example scenes ("verse", "chorus"), so its scene routes reach their success paths (both set the amp).
SCENES = """
[[scene]]
name = "verse"
values = { "fx/amp/gain" = -6.0 }
[[scene]]
name = "chorus"
ramp_ms = 50
values = { "fx/amp/gain" = -12.0 }
"""


def log(msg):
    print("api-check: " + msg, file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--openapi", default=os.path.join(ROOT, "Sources/WebAPI/Resources/openapi.json"),
                   help="the document to check (default: the one in the tree)")
    p.add_argument("--binary", default=os.path.join(ROOT, ".build/debug/tandem"), help="the tandem binary")
    p.add_argument("--examples", type=int, default=40, help="test cases per operation and phase (default 40)")
    p.add_argument("--seed", type=int, help="schemathesis's seed (default: a new one, printed)")
    p.add_argument("--workers", default="1", help="schemathesis workers (default 1)")
    p.add_argument("--checks", default=CHECKS, help="schemathesis checks (default %s; `all` adds e.g. "
                                                     "negative_data_rejection and unsupported_method)" % CHECKS)
    p.add_argument("--keep", action="store_true", help="keep the session folder and logs")
    return p.parse_args(argv)


# schemathesis's command line through this python3 (when its script is not on PATH).
MODULE = [sys.executable, "-c", "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())"]


def ensure_schemathesis():
    """The schemathesis command: installed with pip into this python3 when missing."""
    found = shutil.which("schemathesis")
    if found:
        return [found]
    try:
        import schemathesis  # noqa: F401
        return MODULE
    except ImportError:
        pass
    log("installing schemathesis with pip")
    for extra in ([], ["--break-system-packages"]):
        r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "schemathesis"] + extra)
        if r.returncode == 0:
            break
    found = shutil.which("schemathesis")
    if found:
        return [found]
    try:
        import importlib
        importlib.invalidate_caches()
        import schemathesis  # noqa: F401,F811
        return MODULE
    except ImportError:
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


def spawn(cmd, log_path, env=None):
    """A process in its own group, stdout and stderr into `log_path`."""
    out = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True)


def stop(p, timeout):
    """SIGTERM to `p`, SIGKILL to its process group after `timeout`. Returns its exit code and whether SIGTERM did
    it."""
    if p is None or p.poll() is not None:
        return (p.returncode if p else None), True
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout)
        return p.returncode, True
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)
        return p.returncode, False


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def request(base, method, path, body=None, timeout=10):
    """(status, parsed JSON or text) of one request; (None, why) when it could not be made."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (OSError, urllib.error.URLError) as e:
        return None, str(e)
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


# ---------------------------------------------------------------------------------------------------------------------
# The session

def installed(binary, uri):
    r = subprocess.run([binary, "plugins", "show", uri], capture_output=True, text=True, timeout=60)
    return r.returncode == 0


def make_session(folder, server, binary):
    media = os.path.join(folder, "media")
    os.makedirs(media)
    wav = os.path.join(media, "jingle-1.wav")
    subprocess.run(["sox", "-n", "-r", str(RATE), "-c", "1", wav, "synth", "2", "sine", "440", "vol", "0.3"],
                   check=True)
    plugins = []
    for name, uri, controls in PLUGINS:
        if installed(binary, uri):
            plugins.append('[[rack.plugins]]\nuri = "%s"\nname = "%s"\n%s' % (
                uri, name, "controls = { %s }\n" % controls if controls else ""))
        else:
            log("plugin %s (%s) is not installed: left out of the rack" % (uri, name))
    if not plugins:
        raise RuntimeError("none of the rack's plugins is installed (make deps installs swh-lv2)")
    text = """# Written by scripts/api-check.py.
[session]
name = "apicheck"
server = "%s"
directory = "%s"
server_wait = 10

[recorder]
client = "tandem-rec"
channels = 2
start = "immediately"

[player]
client = "tandem-play"
channels = 1
queue = ["media/jingle-1.wav"]
loop = "all"
start = "immediately"

[[rack]]
name = "fx"
client = "tandem-fx"
isolate = false
inputs = 1
%s
[[connect]]
from = "tandem-play:out_1"
to = "tandem-fx:in_1"

[[connect]]
from = "tandem-fx:out_1"
to = "tandem-rec:in_1"
%s""" % (server, folder, "\n".join(plugins), SCENES if installed(binary, PLUGINS[0][1]) else "")
    preset = os.path.join(folder, "apicheck.toml")
    with open(preset, "w") as f:
        f.write(text)
    # The document's example of a preset file to apply: the same setup (applying it changes nothing).
    shutil.copy(preset, os.path.join(folder, "evening.toml"))
    return preset


# ---------------------------------------------------------------------------------------------------------------------
# The document

def operations(doc):
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if method in ("get", "put", "post", "delete", "patch"):
                yield path, method, op


def excluded(path):
    return path == "/" or path.startswith("/page/") or path == "/api/events"


def missing_operations(doc, base):
    """Operations of the document the server does not serve: asked once with a name no session has and no body,
    answered 404 "no METHOD PATH here". Operations without a path parameter that act and take no body are not asked
    (the question would act)."""
    missing = []
    for path, method, op in operations(doc):
        if excluded(path):
            continue
        params = [p for p in op.get("parameters", []) if p.get("in") == "path"]
        needs_body = op.get("requestBody", {}).get("required", False)
        if not params and method != "get" and not needs_body:
            continue
        probe = path
        for p in params:
            probe = probe.replace("{%s}" % p["name"], "9999999" if p.get("schema", {}).get("type") == "integer"
                                  else "__api_check__")
        status, answer = request(base, method.upper(), probe)
        if status == 404 and isinstance(answer, dict) and str(answer.get("error", "")).startswith(
                "no %s " % method.upper()) and " here (" in str(answer.get("error", "")):
            missing.append((method.upper(), path, op.get("operationId")))
    return missing


def write_config(folder, base, examples):
    """schemathesis's settings for this run: `examples` cases per operation, fewer for the slow list of installed
    plugins (a second each); the running take's id (and its first file) for the take routes, so their cases reach a
    real report and file (byte ranges) instead of a 404; one light plugin for the route that adds plugins."""
    status, takes = request(base, "GET", "/api/takes")
    take = takes[0]["id"] if status == 200 and isinstance(takes, list) and takes else None
    lines = ["[generation]", "max-examples = %d" % examples, "",
             "[[operations]]", 'include-operation-id = "listInstalledPlugins"', "generation = { max-examples = %d }"
             % max(1, examples // 5), ""]
    if take:
        for opid in ("getTake", "getTakeFile"):
            fixed = '"path.id" = "%s"' % take + (', "path.index" = 0' if opid == "getTakeFile" else "")
            lines += ["[[operations]]", 'include-operation-id = "%s"' % opid, "parameters = { %s }" % fixed, ""]
    # Plugins added to running chains are swh's amp, whatever the fuzzer finds in the installed list: a chain of
    # random heavy or crashing plugins in the recorder's process is the plugin sweep's business, not this check's.
    lines += ["[[operations]]", 'include-operation-id = "addPlugin"',
              'parameters = { "body.uri" = "%s" }' % PLUGINS[0][1], ""]
    path = os.path.join(folder, "schemathesis.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


# ---------------------------------------------------------------------------------------------------------------------
# The report

def summarize(report_dir):
    """Counts from schemathesis's NDJSON report: requests, answers by status, failed checks by name (unique
    failures), and the first failure of each check."""
    requests, statuses, failures, examples = 0, collections.Counter(), collections.Counter(), {}
    seen = set()
    for path in glob.glob(os.path.join(report_dir, "*.ndjson")):
        with open(path) as f:
            for line in f:
                event = json.loads(line)
                done = event.get("ScenarioFinished")
                if not done:
                    continue
                rec = done.get("recorder", {})
                for case_id, interaction in rec.get("interactions", {}).items():
                    requests += 1
                    response = interaction.get("response") or {}
                    statuses[response.get("status_code", "no answer")] += 1
                for case_id, checks in rec.get("checks", {}).items():
                    for c in checks:
                        if c.get("status") != "failure":
                            continue
                        case = rec.get("cases", {}).get(case_id, {}).get("value", {})
                        key = (c["name"], case.get("method"), case.get("path"),
                               str((c.get("failure_info") or {}).get("failure", {}).get("title", "")))
                        if key in seen:
                            continue
                        seen.add(key)
                        failures[c["name"]] += 1
                        examples.setdefault(c["name"], "%s %s" % (case.get("method"), case.get("path")))
    return requests, statuses, failures, examples


# ---------------------------------------------------------------------------------------------------------------------

def main(argv):
    args = parse_args(argv)
    started = time.monotonic()
    binary = os.path.abspath(args.binary)
    document = os.path.abspath(args.openapi)
    missing_tools = [t for t in TOOLS if not shutil.which(t)]
    if missing_tools or not os.access(binary, os.X_OK) or not os.path.exists(document):
        log("missing: %s" % ", ".join(missing_tools + ([binary] if not os.access(binary, os.X_OK) else [])
                                      + ([document] if not os.path.exists(document) else [])))
        log("`make deps` installs the tools; `swift build` makes the binary")
        return 3
    try:
        with open(document) as f:
            doc = json.load(f)
    except ValueError as e:
        log("%s is not JSON: %s" % (document, e))
        return 1
    st = ensure_schemathesis()
    if not st:
        log("schemathesis could not be installed (python3 -m pip install schemathesis)")
        return 3
    clean = os.path.join(ROOT, "scripts", "clean-jack-shm.sh")
    if os.path.exists(clean):
        subprocess.run([clean], stdout=sys.stderr)

    folder = tempfile.mkdtemp(prefix="tandem-api-check-")
    server = "apicheck%d" % os.getpid()
    env = dict(os.environ, JACK_DEFAULT_SERVER=server, JACK_NO_START_SERVER="1", JACK_NO_AUDIO_RESERVATION="1")
    jackd = tandem = None
    failed, missing = [], []
    requests, statuses, failures, examples = 0, collections.Counter(), collections.Counter(), {}
    try:
        jackd = spawn(["jackd", "-n", server, "-r", "-d", "dummy", "-r", str(RATE), "-p", str(PERIOD)],
                      os.path.join(folder, "jackd.log"), env)
        ok = wait_until(lambda: jackd.poll() is not None or subprocess.run(
            ["jack_lsp"], env=env, capture_output=True).returncode == 0, 15)
        if not ok or jackd.poll() is not None:
            log("jackd %s did not start:\n%s" % (server, tail(os.path.join(folder, "jackd.log"))))
            return 3
        preset = make_session(folder, server, binary)
        port = free_port()
        base = "http://127.0.0.1:%d" % port
        tandem_log = os.path.join(folder, "tandem.log")
        tandem = spawn([binary, "run", preset, "--no-view", "--control-port", "0", "--http", "127.0.0.1:%d" % port],
                       tandem_log, env)

        def recording():
            status, s = request(base, "GET", "/api/status", timeout=2)
            return status == 200 and isinstance(s, dict) and s.get("recorder", {}).get("recording") is True

        if not wait_until(lambda: tandem.poll() is not None or recording(), 30, 0.25) or tandem.poll() is not None:
            log("tandem did not come up recording on %s:\n%s" % (base, tail(tandem_log)))
            return 3
        log("tandem %s on %s, JACK server %s, session %s" % (binary, base, server, folder))

        missing = missing_operations(doc, base)
        for method, path, opid in missing:
            log("not served yet, left out: %s %s (%s)" % (method, path, opid))

        report_dir = os.path.join(folder, "report")
        config = write_config(folder, base, args.examples)
        cmd = st + ["--config-file", config, "run", document, "--url", base, "--checks", args.checks,
                    "--exclude-path-regex", "^/$|^/page/", "--exclude-path", "/api/events",
                    "--workers", str(args.workers), "--continue-on-failure",
                    "--request-timeout", "20", "--no-color", "--report", "ndjson", "--report-dir", report_dir,
                    "--generation-database", "none", "--suppress-health-check", "all"]
        for _, _, opid in missing:
            cmd += ["--exclude-operation-id", opid]
        if args.seed is not None:
            cmd += ["--seed", str(args.seed)]
        log("running: " + " ".join(cmd))
        schemathesis_rc = subprocess.run(cmd, cwd=folder).returncode
        requests, statuses, failures, examples = summarize(report_dir)
        if schemathesis_rc != 0:
            failed.append("schemathesis exit %d" % schemathesis_rc)

        # Tandem must have come through it, still recording.
        if tandem.poll() is not None:
            failed.append("tandem died during the run (exit %s):\n%s" % (tandem.returncode, tail(tandem_log, 40)))
        else:
            status, s = request(base, "GET", "/api/status")
            if status != 200:
                failed.append("GET /api/status after the run: %s %s" % (status, s))
            else:
                if not s.get("recorder", {}).get("recording"):
                    log("the run left the recorder stopped (POST /api/recorder/stop or arm): starting a take again")
                    code, answer = request(base, "POST", "/api/recorder/start")
                    if code != 200:
                        failed.append("POST /api/recorder/start after the run: %s %s" % (code, answer))
                frames = []
                for _ in range(2):
                    time.sleep(1)
                    code, s = request(base, "GET", "/api/status")
                    rec = s.get("recorder", {}) if code == 200 and isinstance(s, dict) else {}
                    frames.append((rec.get("take"), rec.get("frames", 0), rec.get("recording")))
                (take0, f0, _), (take1, f1, on) = frames
                if not on or take0 != take1 or f1 <= f0:
                    failed.append("the recorder is not recording after the run: %s" % frames)
                else:
                    log("still recording: take %s, %d frames in a second" % (take1, f1 - f0))
        code, clean_exit = stop(tandem, 20)
        if tandem.returncode is not None and not clean_exit:
            failed.append("tandem ignored SIGTERM for 20 s")
        elif code != 0 and not any(f.startswith("tandem died") for f in failed):
            failed.append("tandem exited %s on SIGTERM:\n%s" % (code, tail(tandem_log, 20)))
        tandem = None
        if "Fatal error" in tail(tandem_log, 400):
            failed.append("tandem's log has a Fatal error:\n%s" % tail(tandem_log, 40))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        log("setup failed: %s" % e)
        return 3
    finally:
        stop(tandem, 20)
        stop(jackd, 10)
        if args.keep:
            log("kept: %s" % folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)

    server_errors = sum(n for code, n in statuses.items() if isinstance(code, int) and code >= 500)
    for f in failed:
        log("FAILED: " + f)
    for name, count in sorted(failures.items()):
        log("%d unique %s failure(s), e.g. %s" % (count, name, examples[name]))
    verdict = "FAILED" if failed or failures else "ok"
    print("api-check: %s, %d requests (%s), %d server errors, %d schema violations, %d status code, %d content type; "
          "%d operations left out (not served yet); %.0f s" % (
              verdict, requests, ", ".join("%s: %d" % (k, v) for k, v in sorted(statuses.items(), key=str)),
              server_errors, failures.get("response_schema_conformance", 0), failures.get("status_code_conformance", 0),
              failures.get("content_type_conformance", 0), len(missing),
              time.monotonic() - started), flush=True)
    return 1 if verdict == "FAILED" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
