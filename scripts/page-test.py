#!/usr/bin/env python3
"""The page served by Tandem, tested in a real browser (Debian's chromium and chromedriver, driven by selenium).

It starts its own JACK server (its own name, dummy driver, 48 kHz, period 256, real-time with -R where the machine
allows it) and a Tandem session on it: a recorder (2 channels, armed), a player looping a test signal (a 1 kHz sine at
-6.02 dBFS peak with a little noise so no two stretches of it are alike), an in-process rack `fx` with swh's amp whose
gain a MIDI CC map drives (CC 7 -> -40..0 dB), and an isolated rack `iso` (its own process) with another amp. The
player's first output feeds the recorder's first input; its second feeds both racks. A probe client of this script's
own (libjack through ctypes) sends MIDI and captures audio. Then each acceptance point of the page is checked, each
with its measured number printed as `measured: …`:

  console     the page loads and runs without console errors (a 404 of a route this server does not have, which
              the page probes for and does without, is allowed and named)
  framing     framed by a site of another origin (this script's own, on a loopback port) that the session's
              http_origins does not list, the page does not render: the frame holds Chromium's error page, no
              Tandem script runs in it, the console has the frame-ancestors refusal
  framing allowed  framed by the origin http_origins lists, the page renders and goes live in the frame
  cors        from the listed origin, fetch(/api/status) with an Authorization: Bearer header (so preflighted) is
              answered and read; from the other origin it fails (the preflight is not allowed)
  head        HEAD of the page, two page files, /api/status, /api/takes, /metrics and a missing route: the status,
              Content-Length and headers GET has, and no body (read from the socket)
  page live   the page opens its event stream and reads the status and the plugins
  server      the Server card shows the JACK server's DSP load and xruns as the status has them
  meter       the meter of in_1 reads the test signal's RMS and peak within 1 dB
  slider      dragging the amp's gain slider changes the rack's output by the value it set (samples captured from
              fx:out_1 before and after, within 0.5 dB)
  isolated    the same for the isolated rack: its amp's slider dragged on the page changes iso:out_1 by the value set
              (relayed to the rack's process), and a value set there by another client comes back to the page
  levels      the fx chain's mix set over OSC and its gain over HTTP, by other clients: the page's sliders show both
  player      the player's gain set over HTTP shows on the page, and its queue is listed with the item playing
  marker      a take started and a marker added over HTTP: the page's badge says recording and its markers list
              shows the marker (label and time) from the `marker-added` event
  midi        a CC 7 sent into fx:midi_in moves the gain control on the page to the map's value
  network     every connection to Tandem cut (ss -K): the page reconnects by itself and catches up from the event
              sequence (a change made meanwhile shows)
  labels      every button, input, select, link and audio element of the page has an accessible name
  graph       choosing fx:out_1 and then pt-rec:in_2 in the graph view makes that JACK connection (`jack_lsp -c`)
  presets     the running setup saved from the page appears in the list and can be switched to, and is then marked
              as the one running
  toast       a refusal's toast is gone when the tab changes, and never covers the tab bar
  armed       the session's process stopped 60 ms while the recorder is only armed: the server counts missed frames,
              the page shows no "missed" (no take lost anything); stopped again during a take: the page shows that
              take's missed frames, as many as the status counted during it
  openapi     the page never fetched the OpenAPI document (140 KB) while every tab was used
  chain       a plugin added to the rack from the installed-plugin browser, moved first, removed
  favourites  a control pinned on the Racks tab is stored by the server and shown on the Favourites tab; a pin
              added by another client (PUT /api/favourites) shows there too, by the `favourites-changed` event
  firefox     the same page in Firefox (when installed; driven over Marionette): live, meter level, every tab drawn
  cpu         Tandem's CPU (utime + stime from /proc/PID/stat) over 20 s with no page and with 10 open pages, and
              the share of one page
  take        a take recorded with the 10 pages open (started and stopped from a page) equals the test signal bit
              for bit
  download    the take appears in the Takes list, and its download from the page is bit-exact
  audio       the take plays in the page: its <audio> element reads the length and seeks
  restart     the JACK server is killed and started again with the same name: the page shows the server lost,
              then the session again (live, meters at the signal's level, the graph's connections) without a reload

Then a second session on the same server, 3 racks of 10 x42 and swh plugins (181 controls a rack), in a 390x844
phone screen (`--part racks` runs only this part, in about a minute):

  racks folds the Racks tab opens with only each rack's first plugin unfolded; a fold opened stays open after a
              reload; the tab's height is printed
  racks reach any control is at most three actions from the Overview: the tab, its plugin in the Show list, its name
              in the filter (or one swipe to the end); the control is then on screen, under no bar, and takes a key
              (the server's value changes). Printed: the actions each target took
  racks where the Show list says the plugin in view while scrolling every rack
  value box   a control whose value has long labels ("-3dB @freq, flat") shows them whole in its value box

Then a third session with two scenes of an in-process rack's amp (0 and -20 dB) and a program-change map, in a
390x844 phone screen (`--part scenes` runs only this part, in about half a minute):

  scenes buttons   a large button per scene on the Overview, on screen (under no bar) without scrolling
  scenes tap       tapping a scene recalls it: the server's gain is the scene's, its button is lit, and the rack's
                   output changes by the scenes' difference (-20 dB, within 0.5 dB, in captured samples)
  scenes elsewhere a recall over OSC and one by MIDI program change (through the map) light their buttons
  scenes morph     a morph made over OSC moves the page's morph slider and scenes; the slider dragged on the page
                   sets the gain between the scenes' (in dB) and the output follows (within 0.5 dB)
  scenes edited    a scene saved and deleted by another client appears and goes (`scenes-changed`)

    scripts/page-test.py                       # every check; exit 1 when one fails
    scripts/page-test.py --screenshots         # also docs/screenshots/TAB-1280x800.png and TAB-390x844.png
    scripts/page-test.py --no-firefox          # skip the Firefox check (it takes a minute more)
    scripts/page-test.py --part racks          # only the 30-plugin phone part
    scripts/page-test.py --part scenes         # only the scenes part (its own session; about half a minute)
    scripts/page-test.py --part security       # only framing, cors and head (the first session; seconds)
    scripts/page-test.py --tandem .build/release/tandem --keep

Exit 0 when every check passed, 1 when one failed (or the rig could not be set up: the reason is printed), 3 when a
tool is missing. Needs: jackd, jack_lsp, chromium, chromedriver (apt-get install jackd2 chromium chromium-driver), the
Python package selenium (pip install selenium; it brings websocket-client, which the marker check reads the event
stream with), swh-lv2 (the amp), a built tandem. Takes about three minutes on two cores (four with Firefox).
"""
import argparse, array, ctypes, hashlib, json, math, os, random, re, shutil, signal, socket, struct, subprocess
import sys, tempfile, threading, time, urllib.error, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PAGE_DIR = os.path.join(ROOT, "Sources", "WebAPI", "Resources", "page")
RATE, PERIOD = 48000, 256
AMP = "http://plugin.org.uk/swh-plugins/amp"
TABS = ["overview", "racks", "graph", "takes", "presets", "favourites"]
SIZES = [(1280, 800), (390, 844)]
PHONE = (390, 844)
# The 30-plugin part: 3 racks of these 10 mono plugins (x42 and swh), the last an EQ of 33 controls whose last is
# the control the issue names ("any control, e.g. the last plugin's last control of the last rack").
MANY_RACKS = ["band", "room", "vocals"]
MANY_PLUGINS = [("http://plugin.org.uk/swh-plugins/hermesFilter", "hermes"),
                ("http://plugin.org.uk/swh-plugins/gong", "gong"),
                ("http://plugin.org.uk/swh-plugins/triplePara", "para"),
                ("http://plugin.org.uk/swh-plugins/giantFlange", "flange"),
                ("http://plugin.org.uk/swh-plugins/delayorama", "delayorama"),
                ("http://plugin.org.uk/swh-plugins/tapeDelay", "tape"),
                ("http://plugin.org.uk/swh-plugins/harmonicGen", "harmonics"),
                ("http://plugin.org.uk/swh-plugins/gate", "gate"),
                ("http://plugin.org.uk/swh-plugins/fourByFourPole", "poles"),
                ("http://gareus.org/oss/lv2/fil4#mono", "eq")]
PAGES = 10
CPU_SECONDS = 20.0
# The most CPU one page on the Overview (meters at 20 a second, the status every 2 s) may add to Tandem, in percent
# of one core, for the debug build on two cores. The meters message is built once per loop turn and shared by every
# stream now, so a page costs its socket writes and its status reads. Measured (CPU_PER_PAGE_MEASURED): see the
# report; the limit is that figure with a margin for a busy CI machine.
CPU_PER_PAGE_LIMIT = 2.0

failures = []
# (wall-clock ms, check name) of each check as it is made: a console error is placed between them.
marks = [(0, "the start")]


def say(msg):
    print(msg, flush=True)


def check(name, ok, measured):
    marks.append((time.time() * 1000, name))
    say(f"{'PASS' if ok else 'FAIL'} {name}: measured: {measured}")
    if not ok:
        failures.append(name)


def wait_for(what, fn, timeout, every=0.1):
    """Calls fn until it returns a true value (returned) or `timeout` seconds pass (None)."""
    end = time.monotonic() + timeout
    while True:
        try:
            v = fn()
        except Exception:  # noqa: BLE001  (the page or the server may be between states)
            v = None
        if v:
            return v
        if time.monotonic() > end:
            say(f"  (gave up waiting for {what} after {timeout} s)")
            return None
        time.sleep(every)


# ---------------------------------------------------------------------------------------------------------------------
# Files: the test signal, the preset, WAV reading.
# ---------------------------------------------------------------------------------------------------------------------

def test_signal(path, seconds=4):
    """A stereo float WAV: a 1 kHz sine at amplitude 0.5 plus noise of 1e-4, the same on both channels. Returns the
    samples of one channel (array of float32) and its RMS and peak in dB."""
    rng = random.Random(7)
    n = RATE * seconds
    one = array.array("f", (0.5 * math.sin(2 * math.pi * 1000 * i / RATE) + rng.uniform(-1e-4, 1e-4) for i in range(n)))
    both = array.array("f", bytes(8 * n))
    both[0::2] = one
    both[1::2] = one
    data = both.tobytes()
    fmt = struct.pack("<HHIIHH", 3, 2, RATE, RATE * 8, 8, 32)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 4 + 8 + len(fmt) + 8 + len(data)) + b"WAVE")
        f.write(b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data)
    rms = math.sqrt(sum(x * x for x in one) / n)
    peak = max(abs(x) for x in one)
    return one, 20 * math.log10(rms), 20 * math.log10(peak)


def read_wav(path):
    """(channels, samples as one interleaved float32 array) of a float WAV or RF64 file."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] not in (b"RIFF", b"RF64") or blob[8:12] != b"WAVE":
        raise ValueError(f"{path} is no WAV file")
    pos, channels, fmt, data = 12, None, None, None
    ds64 = None
    while pos + 8 <= len(blob):
        cid, size = blob[pos:pos + 4], struct.unpack("<I", blob[pos + 4:pos + 8])[0]
        body = pos + 8
        if cid == b"ds64":
            ds64 = struct.unpack("<Q", blob[body + 8:body + 16])[0]
        elif cid == b"fmt ":
            fmt, channels = struct.unpack("<HH", blob[body:body + 4])
            if fmt == 0xFFFE:
                fmt = struct.unpack("<H", blob[body + 24:body + 26])[0]
        elif cid == b"data":
            if size == 0xFFFFFFFF and ds64 is not None:
                size = ds64
            data = blob[body:body + size]
            break
        pos = body + size + (size & 1)
    if fmt != 3 or data is None:
        raise ValueError(f"{path}: not float samples (format {fmt})")
    samples = array.array("f")
    samples.frombytes(data[:len(data) - len(data) % 4])
    return channels, samples


PRESET = """# Written by scripts/page-test.py.
[session]
name = "pagetest"
directory = "{dir}"
server = "{server}"
loudness = true
http = "127.0.0.1:{port}"
http_origins = ["{origin}"]

[recorder]
client = "pt-rec"
channels = 2
format = "wav"
sample = "float32"
start = "armed"

[player]
client = "pt-play"
channels = 2
queue = ["signal.wav"]
loop = "item"

[[rack]]
name = "fx"
isolate = false
inputs = 1
outputs = 1
[[rack.plugins]]
uri = "{amp}"
name = "amp"
controls = {{ gain = 0.0 }}

[[rack]]
name = "iso"
isolate = true
inputs = 1
outputs = 1
[[rack.plugins]]
uri = "{amp}"
name = "amp"
controls = {{ gain = 0.0 }}

[[map]]
cc = 7
engine = "fx"
plugin = "amp"
control = "gain"
min = -40.0
max = 0.0

[[connect]]
from = "pt-play:out_1"
to = "pt-rec:in_1"
[[connect]]
from = "pt-play:out_2"
to = "fx:in_1"
[[connect]]
from = "pt-play:out_2"
to = "iso:in_1"
"""


# ---------------------------------------------------------------------------------------------------------------------
# The probe: a JACK client of this process that captures one port and sends MIDI.
# ---------------------------------------------------------------------------------------------------------------------

AUDIO_TYPE, MIDI_TYPE = b"32 bit float mono audio", b"8 bit raw midi"
PROCESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


class Probe:
    def __init__(self, name="pt-probe"):
        c = ctypes
        j = c.CDLL("libjack.so.0")
        for fn, res, args in [
            ("jack_client_open", c.c_void_p, [c.c_char_p, c.c_int, c.POINTER(c.c_int)]),
            ("jack_port_register", c.c_void_p, [c.c_void_p, c.c_char_p, c.c_char_p, c.c_ulong, c.c_ulong]),
            ("jack_port_get_buffer", c.c_void_p, [c.c_void_p, c.c_uint32]),
            ("jack_set_process_callback", c.c_int, [c.c_void_p, c.c_void_p, c.c_void_p]),
            ("jack_activate", c.c_int, [c.c_void_p]),
            ("jack_deactivate", c.c_int, [c.c_void_p]),
            ("jack_client_close", c.c_int, [c.c_void_p]),
            ("jack_connect", c.c_int, [c.c_void_p, c.c_char_p, c.c_char_p]),
            ("jack_disconnect", c.c_int, [c.c_void_p, c.c_char_p, c.c_char_p]),
            ("jack_midi_clear_buffer", None, [c.c_void_p]),
            ("jack_midi_event_write", c.c_int, [c.c_void_p, c.c_uint32, c.c_char_p, c.c_size_t]),
        ]:
            f = getattr(j, fn)
            f.restype, f.argtypes = res, args
        self.j = j
        self.name = name
        status = c.c_int(0)
        self.client = j.jack_client_open(name.encode(), 0x01, c.byref(status))
        if not self.client:
            raise RuntimeError(f"probe: cannot open a JACK client (status 0x{status.value:x})")
        self.cap = j.jack_port_register(self.client, b"cap", AUDIO_TYPE, 0x1, 0)
        self.midi = j.jack_port_register(self.client, b"midi", MIDI_TYPE, 0x2, 0)
        self.lock = threading.Lock()
        self.want = 0
        self.captured = array.array("f")
        self.outgoing = []
        self.errors = []
        self.cb = PROCESS(self.cycle)
        j.jack_set_process_callback(self.client, ctypes.cast(self.cb, ctypes.c_void_p), None)
        if j.jack_activate(self.client):
            raise RuntimeError("probe: cannot activate")

    def cycle(self, n, _):
        try:
            with self.lock:
                if self.want > 0:
                    buf = self.j.jack_port_get_buffer(self.cap, n)
                    self.captured.frombytes(ctypes.string_at(buf, 4 * n))
                    self.want -= n
                mbuf = self.j.jack_port_get_buffer(self.midi, n)
                self.j.jack_midi_clear_buffer(mbuf)
                for data in self.outgoing:
                    self.j.jack_midi_event_write(mbuf, 0, data, len(data))
                self.outgoing = []
        except Exception as e:  # noqa: BLE001  (an exception must not escape into libjack)
            self.errors.append(repr(e))
        return 0

    def connect(self, a, b):
        if self.j.jack_connect(self.client, a.encode(), b.encode()):
            raise RuntimeError(f"probe: cannot connect {a} to {b}")

    def disconnect(self, a, b):
        if self.j.jack_disconnect(self.client, a.encode(), b.encode()):
            raise RuntimeError(f"probe: cannot disconnect {a} from {b}")

    def capture(self, seconds):
        """`seconds` of the cap port, from the next cycle."""
        with self.lock:
            self.captured = array.array("f")
            self.want = int(seconds * RATE)
        wait_for("the capture", lambda: self.want <= 0, seconds * 4 + 2, every=0.02)
        with self.lock:
            return self.captured

    def send(self, data):
        with self.lock:
            self.outgoing.append(bytes(data))

    def close(self):
        self.j.jack_deactivate(self.client)
        self.j.jack_client_close(self.client)


def level_db(samples):
    if not samples:
        return float("-inf")
    rms = math.sqrt(sum(x * x for x in samples) / len(samples))
    return 20 * math.log10(rms) if rms > 0 else float("-inf")


# ---------------------------------------------------------------------------------------------------------------------
# The rig: jackd, tandem, the browser.
# ---------------------------------------------------------------------------------------------------------------------

class Rig:
    def __init__(self, args):
        self.args = args
        self.dir = tempfile.mkdtemp(prefix="tandem-page-")
        self.server = f"pagetest{os.getpid()}"
        self.env = dict(os.environ, JACK_DEFAULT_SERVER=self.server, TANDEM_PAGE_DIR=PAGE_DIR,
                        JACK_NO_AUDIO_RESERVATION="1")
        os.environ["JACK_DEFAULT_SERVER"] = self.server    # the probe's libjack reads it
        self.jackd = None
        self.tandem = None
        self.port = free_port()
        self.osc_port = free_port(socket.SOCK_DGRAM)
        self.base = f"http://127.0.0.1:{self.port}"
        # The one origin the session's http_origins lists (a site of this script's own is served there by the
        # security part), and one it does not.
        self.origin_port, self.foreign_port = free_port(), free_port()
        self.origin = f"http://127.0.0.1:{self.origin_port}"
        self.foreign = f"http://127.0.0.1:{self.foreign_port}"
        self.drivers = []
        # Processes this run started beyond jackd and tandem (the isolated rack's, Firefox): ended by PID at the end.
        self.children = []
        # Further sessions this run started (the 30-plugin part's): ended at the end.
        self.extra = []
        self.realtime = None

    def start_jack(self):
        subprocess.run([os.path.join(ROOT, "scripts", "clean-jack-shm.sh")], stdout=subprocess.DEVNULL)
        # Real-time scheduling where the machine allows it (root, or rtprio granted), so the browsers do not starve
        # the graph on two cores; without it a take may lose cycles under load (its report says so). A jackd that
        # cannot start with -R is started again without it, and the run says so.
        tries = [True, False] if self.args.realtime and self.realtime is not False else [False]
        for rt in tries:
            log_path = os.path.join(self.dir, "jackd.log")
            log = open(log_path, "ab")
            start = log.tell()
            self.jackd = subprocess.Popen(["jackd", "-n", self.server, "-R" if rt else "-r", "-d", "dummy",
                                           "-r", str(RATE), "-p", str(PERIOD)], stdout=log, stderr=log, env=self.env)
            ok = wait_for("jackd", lambda: self.jackd.poll() is None and subprocess.run(
                ["jack_lsp"], env=self.env, capture_output=True, timeout=10).returncode == 0, 20, every=0.2)
            with open(log_path, "rb") as f:
                f.seek(start)
                words = f.read().decode(errors="replace")
            if ok and rt and re.search(r"cannot use real-time|Cannot lock down|real-time.*fail", words, re.I):
                say("  jackd could not get real-time scheduling here: started without -R")
                ok = None
            if ok:
                self.realtime = rt
                return
            if self.jackd.poll() is None:
                self.jackd.kill()
                self.jackd.wait(10)
        raise SetupError(f"jackd did not start (server {self.server}); see {log_path}")

    def stop_jack(self, sig=signal.SIGKILL):
        if self.jackd and self.jackd.poll() is None:
            self.jackd.send_signal(sig)
            self.jackd.wait(10)

    def start_tandem(self):
        log = open(os.path.join(self.dir, "tandem.log"), "ab")
        self.tandem = subprocess.Popen([self.args.tandem, "run", os.path.join(self.dir, "page.toml"), "--http",
                                        f"127.0.0.1:{self.port}", "--control-port", str(self.osc_port), "--no-view"],
                                       cwd=self.dir, stdout=log, stderr=log, env=self.env)
        ok = wait_for("Tandem's HTTP API and its racks", lambda: self.api("status").get("meters") and all(
            r.get("running") for r in self.api("status").get("racks", [])), 60, every=0.2)
        if not ok:
            raise SetupError(f"tandem did not start (or its racks did not run) within 60 s; see {log.name}")
        for r in self.api("status").get("racks", []):
            if r.get("pid"):
                self.children.append(r["pid"])

    def osc(self, address, *args, port=None):
        """Sends one OSC message to the session's control port (or `port`), as another client would."""
        def pad(b):
            return b + b"\0" * (4 - len(b) % 4)
        tags, data = ",", b""
        for a in args:
            if isinstance(a, str):
                tags, data = tags + "s", data + pad(a.encode())
            else:
                tags, data = tags + "f", data + struct.pack(">f", a)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.sendto(pad(address.encode()) + pad(tags.encode()) + data, ("127.0.0.1", port or self.osc_port))

    def api(self, path, method="GET", body=None, timeout=10):
        return api_at(self.base, path, method, body, timeout)

    def browser(self, width=1280, height=800, downloads=None):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        o = Options()
        o.binary_location = shutil.which("chromium")
        for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--autoplay-policy=no-user-gesture-required", f"--window-size={width},{height}"]:
            o.add_argument(a)
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=o)
        d.set_script_timeout(30)
        if downloads:
            d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads,
                                                               "eventsEnabled": True})
        self.drivers.append(d)
        return d

    def close(self):
        for d in self.drivers:
            try:
                d.quit()
            except Exception:  # noqa: BLE001
                pass
            # A driver that did not quit leaves its chromedriver: ended by its PID.
            proc = getattr(getattr(d, "service", None), "process", None)
            if proc and proc.poll() is None:
                proc.kill()
        for t in [self.tandem] + self.extra:
            if t and t.poll() is None:
                t.send_signal(signal.SIGTERM)
                try:
                    t.wait(20)
                except subprocess.TimeoutExpired:
                    t.kill()
        self.stop_jack(signal.SIGTERM)
        # The isolated rack's process ends with the session; one left over (a session killed hard) is ended by PID,
        # after making sure that PID is still a tandem rack and not a process that took the number since.
        for pid in self.children:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"tandem" in f.read():
                        os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not self.args.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            say(f"kept {self.dir}")


class Marionette:
    """Firefox driven over its own Marionette protocol (no geckodriver: Debian has none), enough to load the page and
    run scripts in it."""

    def __init__(self, directory):
        self.profile = tempfile.mkdtemp(prefix="ff-", dir=directory)
        self.port = free_port()
        with open(os.path.join(self.profile, "user.js"), "w") as f:
            f.write(f'user_pref("marionette.port", {self.port});\nuser_pref("browser.shell.checkDefaultBrowser", false);\n')
        exe = shutil.which("firefox-esr") or shutil.which("firefox")
        self.process = subprocess.Popen([exe, "--headless", "--marionette", "--no-remote", "--profile", self.profile,
                                         "--window-size=1280,800"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sock = wait_for("Firefox's Marionette port", lambda: socket.create_connection(("127.0.0.1", self.port)), 30, 0.2)
        if not self.sock:
            raise RuntimeError("Firefox did not open its Marionette port")
        self.buffer, self.id = b"", 0
        self.read()
        self.command("WebDriver:NewSession", {"capabilities": {}})

    def read(self):
        while b":" not in self.buffer:
            self.buffer += self.sock.recv(65536)
        size, rest = self.buffer.split(b":", 1)
        while len(rest) < int(size):
            rest += self.sock.recv(65536)
        self.buffer = rest[int(size):]
        return json.loads(rest[:int(size)])

    def command(self, name, params=None):
        self.id += 1
        message = json.dumps([0, self.id, name, params or {}]).encode()
        self.sock.sendall(str(len(message)).encode() + b":" + message)
        answer = self.read()
        if answer[2]:
            raise RuntimeError(f"{name}: {answer[2]}")
        return answer[3]

    def script(self, source, *args):
        return self.command("WebDriver:ExecuteScript", {"script": source, "args": list(args)})["value"]

    def close(self):
        try:
            self.command("WebDriver:DeleteSession")
        except Exception:  # noqa: BLE001
            pass
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()


def firefox_check(rig, signal_rms):
    """The same page in Firefox: it goes live, shows the meter's level, and draws every tab."""
    ff = Marionette(rig.dir)
    try:
        ff.command("WebDriver:Navigate", {"url": rig.base + "/"})
        live = wait_for("the page in Firefox", lambda: ff.script(
            "return window.tandem && tandem.store.stream === 'live' && tandem.store.meterMessages > 5"), 20)
        level = wait_for("the meter in Firefox", lambda: ff.script(
            "return document.querySelector('.meter[data-port=\"in_1\"]')?.dataset.rms"), 10)
        drawn = {}
        for name in TABS:
            ff.script(f"document.querySelector('[data-tab=\"{name}\"]').click()")
            time.sleep(0.8)
            drawn[name] = ff.script(f"const p = document.getElementById('panel-{name}'); "
                                    "return !p.hidden && p.querySelectorAll('.card').length")
        agent = ff.script("return navigator.userAgent.match(/Firefox\\/[0-9.]+/)[0]")
    finally:
        ff.close()
    ok = bool(live) and level is not None and abs(float(level) - signal_rms) <= 1 and all(drawn.values())
    check("firefox", ok, f"{agent}: live, in_1 at {float(level or 'nan'):.2f} dB RMS, tabs drawn "
          + ", ".join(f"{k} ({v} cards)" for k, v in drawn.items()))


def api_at(base, path, method="GET", body=None, timeout=10):
    """The JSON answer of `method /api/path` of the session at `base`."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"{base}/api/{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


class SetupError(Exception):
    """The rig could not be set up (jackd or tandem did not start): no check could run."""


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def browser_seconds():
    """CPU seconds of every chromium process now (the pages' own cost, for the record)."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if not f.read().startswith("chrom"):
                    continue
            total += cpu_seconds(pid)
        except OSError:
            pass
    return total


def cpu_share(pid, seconds):
    """Percent of one core the process used over `seconds`, and the browsers meanwhile."""
    c0, b0, t0 = cpu_seconds(pid), browser_seconds(), time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - t0
    return 100 * (cpu_seconds(pid) - c0) / wall, 100 * (browser_seconds() - b0) / wall


def connections(env):
    out = subprocess.run(["jack_lsp", "-c"], env=env, capture_output=True, text=True).stdout
    pairs, port = set(), None
    for line in out.splitlines():
        if line.startswith(" ") or line.startswith("\t"):
            pairs.add((port, line.strip()))
        else:
            port = line.strip()
    return pairs


# ---------------------------------------------------------------------------------------------------------------------
# Page helpers.
# ---------------------------------------------------------------------------------------------------------------------

def open_page(d, base):
    d.get(base + "/")
    # Room for every request the page makes, so the openapi check sees them all.
    d.execute_script("performance.setResourceTimingBufferSize(100000)")
    return wait_for("the page to be live", lambda: d.execute_script(
        "return window.tandem && tandem.store.stream === 'live' && tandem.store.status && tandem.store.plugins"), 20)


def tab(d, name):
    d.find_element("css selector", f'[role="tab"][data-tab="{name}"]').click()
    time.sleep(0.3)


def css(d, selector):
    return d.find_element("css selector", selector)


def click(d, selector, timeout=10):
    """Clicks what `selector` finds, again when the page redrew it meanwhile (a stale element)."""
    def attempt():
        css(d, selector).click()
        return True
    return wait_for(f"a click on {selector}", attempt, timeout)


def console_errors(d):
    return [e for e in d.get_log("browser") if e["level"] == "SEVERE"]


def allowed_probe(rig, message):
    """A 404 of a route the server does not have (the page asks once and does without): allowed, and named."""
    m = re.match(r"(\S+) - Failed to load resource: the server responded with a status of 404", message)
    if not m:
        return None
    path = m.group(1).split(rig.base, 1)[-1]
    # The console does not say the method: a route that one of them lacks is the probe's.
    for method, body in (("GET", None), ("POST", {})):
        try:
            rig.api(path[len("/api/"):], method=method, body=body)
        except urllib.error.HTTPError as e:
            if e.code == 404 and re.search(r'"no %s \\?/api' % method, e.read().decode(errors="replace")):
                return path
    return None


def screenshots(rig, d, out):
    os.makedirs(out, exist_ok=True)
    for width, height in SIZES:
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                          {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
        for name in TABS:
            tab(d, name)
            d.execute_script("window.scrollTo(0, 0)")
            time.sleep(1.2)
            path = os.path.join(out, f"{name}-{width}x{height}.png")
            d.save_screenshot(path)
            say(f"  screenshot {os.path.relpath(path, ROOT)}")
    d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


# ---------------------------------------------------------------------------------------------------------------------
# The checks.
# ---------------------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "debug", "tandem"), help="the tandem binary")
    ap.add_argument("--screenshots", action="store_true", help="write docs/screenshots/TAB-WxH.png of each tab")
    ap.add_argument("--keep", action="store_true", help="keep the session folder and logs")
    ap.add_argument("--no-realtime", dest="realtime", action="store_false",
                    help="run jackd without real-time scheduling (-r instead of -R)")
    ap.add_argument("--no-firefox", dest="firefox", action="store_false",
                    help="skip the Firefox check (it runs when firefox-esr or firefox is installed)")
    ap.add_argument("--part", choices=["all", "racks", "scenes", "security"], default="all",
                    help="racks: only the 30-plugin phone part (its own session); scenes: only the scenes part (its "
                         "own session); security: only the framing, CORS and HEAD checks (the first session)")
    args = ap.parse_args()

    missing = [t for t in ("jackd", "jack_lsp", "chromium", "chromedriver", "ss") if not shutil.which(t)]
    if not os.access(args.tandem, os.X_OK):
        missing.append(args.tandem)
    if not os.path.isdir("/usr/lib/lv2/amp-swh.lv2"):
        missing.append("swh-lv2 (the amp plugin)")
    if not os.path.isdir("/usr/lib/lv2/fil4.lv2"):
        missing.append("x42-plugins (the 30-plugin part's EQ)")
    import importlib.util
    # websocket-client comes with selenium; the marker check reads the event stream with it.
    for module, package in (("selenium", "selenium"), ("websocket", "websocket-client")):
        if importlib.util.find_spec(module) is None:
            missing.append(f"the Python package {package} (pip install {package})")
    if missing:
        say("page-test: missing: " + ", ".join(missing))
        say("  apt-get install -y jackd2 chromium chromium-driver swh-lv2 x42-plugins iproute2; pip install selenium")
        return 3
    try:
        import ctypes.util
        if not ctypes.util.find_library("jack"):
            raise OSError("no libjack")
    except OSError:
        say("page-test: missing: libjack (apt-get install -y libjack-jackd2-0)")
        return 3

    rig = Rig(args)
    try:
        if args.part == "racks":
            rig.start_jack()
            many_plugins_part(rig)
        elif args.part == "scenes":
            rig.start_jack()
            scenes_part(rig)
        else:
            run(rig)
    except SetupError as e:
        say(f"page-test: the rig could not be set up: {e}")
        return 1
    except Exception as e:  # noqa: BLE001  (any other failure is a failed run, said in words, never a pass)
        import traceback
        traceback.print_exc()
        say(f"page-test: stopped by an error after {len(marks) - 1} check(s): {type(e).__name__}: {e}")
        failures.append("error")
    finally:
        rig.close()
    if failures:
        say(f"page-test: {len(failures)} check(s) failed: {', '.join(failures)}")
        return 1
    say("page-test: every check passed")
    return 0


def run(rig):
    signal_one, signal_rms, signal_peak = test_signal(os.path.join(rig.dir, "signal.wav"))
    with open(os.path.join(rig.dir, "page.toml"), "w") as f:
        f.write(PRESET.format(dir=rig.dir, server=rig.server, amp=AMP, port=rig.port, origin=rig.origin))
    rig.start_jack()
    rig.start_tandem()
    pid = rig.tandem.pid
    say(f"session in {rig.dir}, JACK server {rig.server}, page at {rig.base}/")
    if rig.args.part == "security":
        security_part(rig)
        return

    # CPU with no page open, once the session has settled.
    time.sleep(3)
    idle, _ = cpu_share(pid, CPU_SECONDS)
    say(f"  Tandem with no page: {idle:.2f} % of one core over {CPU_SECONDS:.0f} s")
    security_part(rig)

    downloads = os.path.join(rig.dir, "downloads")
    os.makedirs(downloads)
    d = rig.browser(downloads=downloads)
    t0 = time.monotonic()
    live = open_page(d, rig.base)
    check("page live", bool(live), f"live (stream open, status and plugins read) after {time.monotonic() - t0:.2f} s"
          if live else "never live")
    d.execute_script("window.__pageTestMark = 'same page'")
    server_check(rig, d)

    # Meter: in_1 carries the signal as it is.
    def meter():
        row = css(d, '.meter[data-port="in_1"]')
        return float(row.get_attribute("data-rms")), float(row.get_attribute("data-peak")), \
            css(d, '.meter[data-port="in_1"] .rms-db').text, css(d, '.meter[data-port="in_1"] .peak-db').text
    wait_for("meter numbers", lambda: meter()[2] not in ("", "–", "-inf"), 10)
    rms, peak, rms_text, peak_text = meter()
    shown_rms, shown_peak = float(rms_text), float(peak_text)
    check("meter", abs(shown_rms - signal_rms) <= 1 and abs(shown_peak - signal_peak) <= 1,
          f"in_1 shows RMS {rms_text} dB and peak {peak_text} dB; the signal is RMS {signal_rms:.2f} dB, "
          f"peak {signal_peak:.2f} dB (off by {shown_rms - signal_rms:+.2f} and {shown_peak - signal_peak:+.2f} dB)")

    loudness_check(rig, d)
    armed_check(rig, d)

    # Slider: the amp's gain, dragged on the page, heard in fx:out_1.
    probe = Probe()
    probe.connect("fx:out_1", f"{probe.name}:cap")
    probe.connect(f"{probe.name}:midi", "fx:midi_in")
    time.sleep(0.3)
    before = level_db(probe.capture(0.5))
    tab(d, "racks")
    slider = wait_for("the gain slider", lambda: css(d, '.control[data-key="fx/amp/gain"] input[type="range"]'), 10)
    from selenium.webdriver.common.action_chains import ActionChains
    width = slider.size["width"]
    # From the middle (0 dB) to a quarter of the way: -35 dB on the amp's -70..70 dB.
    ActionChains(d).move_to_element(slider).click_and_hold().move_by_offset(-width // 4, 0).release().perform()
    set_value = wait_for("the control's value", lambda: rig.api("engines/fx/plugins/amp/controls/gain")["value"]
                         if abs(rig.api("engines/fx/plugins/amp/controls/gain")["value"]) > 1 else None, 5)
    time.sleep(0.3)
    after = level_db(probe.capture(0.5))
    shown = d.execute_script("return document.querySelector('.control[data-key=\"fx/amp/gain\"] .value').value")
    change = after - before
    check("slider", set_value is not None and abs(change - set_value) < 0.5,
          f"gain dragged to {shown} (server: {set_value}); fx:out_1 went from {before:.2f} to {after:.2f} dB RMS, "
          f"a change of {change:+.2f} dB")

    isolated_check(rig, d, probe)
    levels_check(rig, d)
    player_check(rig, d)
    marker_check(rig, d)

    # MIDI CC 7 through the map moves the control on the page.
    cc_value = 64
    expected = -40 + 40 * cc_value / 127
    t0 = time.monotonic()
    probe.send([0xB0, 7, cc_value])
    moved = wait_for("the page to show the CC", lambda: abs(float(css(d, '.control[data-key="fx/amp/gain"]')
                                                                 .get_attribute("data-value")) - expected) < 0.05, 5, every=0.01)
    latency = time.monotonic() - t0
    gain = "document.querySelector('.control[data-key=\"fx/amp/gain\"]')"
    page_value = float(d.execute_script(f"return {gain}.dataset.value"))
    position = int(d.execute_script(f"return {gain}.querySelector('input[type=range]').value"))
    check("midi", bool(moved) and abs(position - round((expected + 70) / 140 * 1000)) <= 1,
          f"CC 7 = {cc_value} sent; the page shows {page_value:.2f} dB (map: {expected:.2f} dB), slider at "
          f"{position}/1000, {latency * 1000:.0f} ms after the message")
    probe.close()

    # A lost network: every connection to Tandem is cut (ss -K); a change made meanwhile reaches the page when it
    # has reconnected by itself and caught up from the event it last saw.
    connects = d.execute_script("return tandem.store.connects")
    cut = subprocess.run(["ss", "-K", "state", "established", f"( sport = :{rig.port} )"], capture_output=True) \
        if shutil.which("ss") else subprocess.CompletedProcess([], 127)
    t0 = time.monotonic()
    rig.api("engines/fx/plugins/amp/controls/gain", method="PUT", body={"value": -12})
    caught = wait_for("the page to catch up", lambda: d.execute_script("return tandem.store.connects") > connects
                      and float(css(d, '.control[data-key="fx/amp/gain"]').get_attribute("data-value")) == -12, 15, 0.02)
    took = time.monotonic() - t0
    shown = d.execute_script(f"return {gain}.dataset.value")
    check("network", cut.returncode == 0 and bool(caught),
          f"connections cut, gain set to -12 dB meanwhile; the page reconnected (stream {connects + 1}) and shows "
          f"{shown} dB {took:.2f} s later" if caught else f"the page did not catch up (ss -K: {cut.returncode})")

    # Every control of every tab has a name a screen reader says.
    unnamed = d.execute_script("""
        const out = [];
        for (const el of document.querySelectorAll("main button, main input, main select, main a[href], main audio, nav button")) {
            if (el.type === "hidden") continue;
            const byId = (el.getAttribute("aria-labelledby") || "").split(" ").map((i) => document.getElementById(i)?.textContent || "").join("");
            const name = el.getAttribute("aria-label") || byId || [...(el.labels || [])].map((l) => l.textContent).join("")
                || el.textContent.trim() || el.title;
            if (!name || !name.trim()) out.push(el.outerHTML.slice(0, 120));
        }
        return [out, document.querySelectorAll("main button, main input, main select, main a[href], main audio, nav button").length];
    """)
    check("labels", not unnamed[0], f"{unnamed[1]} controls on the page, {len(unnamed[0])} without a name"
          + (": " + " | ".join(unnamed[0][:5]) if unnamed[0] else ""))

    # Graph: fx:out_1 to pt-rec:in_2 by pointer.
    tab(d, "graph")
    wait_for("the graph", lambda: css(d, '.port[data-port="fx:out_1"]'), 10)
    css(d, '.port[data-port="fx:out_1"]').click()
    css(d, '.port[data-port="pt-rec:in_2"]').click()
    made = wait_for("the connection", lambda: ("fx:out_1", "pt-rec:in_2") in connections(rig.env), 5)
    listed = wait_for("the page's connection list",
                      lambda: d.find_elements("css selector", 'li[data-from="fx:out_1"][data-to="pt-rec:in_2"]'), 5)
    check("graph", bool(made) and bool(listed),
          "jack_lsp -c shows fx:out_1 -> pt-rec:in_2" + (" and the page lists it" if listed else ", the page does not")
          if made else "jack_lsp -c shows no fx:out_1 -> pt-rec:in_2")

    # Presets: the running setup saved from the page, then switched to (applying it changes nothing).
    tab(d, "presets")
    css(d, "#preset-name").send_keys("from-page")
    css(d, "#preset-save").click()
    switch = 'li[data-path$="/from-page.toml"] button'
    saved = wait_for("the saved preset in the list", lambda: d.find_elements("css selector", switch), 10)
    applied = None
    if saved:
        time.sleep(0.5)
        click(d, switch)
        click(d, switch)     # a second press confirms
        applied = wait_for("the switch", lambda: "from-page:" in css(d, "#toast").text and css(d, "#toast").text, 10)
    marked = wait_for("the running preset marked", lambda: d.execute_script(
        "const li = document.querySelector('.presets li[aria-current=\"true\"]');"
        "return li && [li.dataset.path, li.querySelector('.running-badge').textContent]"), 5)
    told = "preset" in rig.api("status")
    check("presets", bool(saved) and bool(applied) and os.path.exists(os.path.join(rig.dir, "from-page.toml"))
          and bool(marked) and marked[0].endswith("/from-page.toml"),
          f"saved from-page.toml from the page, listed, switched to it: {applied!r}; marked as running: "
          + (f"{os.path.basename(marked[0])} ({marked[1]!r})" if marked else "none")
          + ("" if told else "; GET /api/status has no 'preset' field, so the page marks the one it switched to"))
    toast_check(d)

    # A chain edited from the page: a plugin added from the installed-plugin browser, moved first, removed.
    tab(d, "racks")
    names = lambda: [p["name"] for p in rig.api("engines/fx/plugins")]
    time.sleep(1)   # the switch above redraws the rack
    if not d.find_elements("css selector", '.card[data-engine="fx"] button.add'):
        say("SKIP chain: the page offers no chain editing (this server has no POST /api/engines/{engine}/plugins)")
    else:
        steps = []
        click(d, '.card[data-engine="fx"] button.add')
        css(d, "#browse-search").send_keys("swh-plugins/amp")
        if not click(d, '.browse-results button[aria-label="Add Simple amplifier"]', 30):
            steps.append("the browser listed: " + css(d, ".browse-results").text.replace("\n", " / ")[:300])
            d.execute_script("document.querySelector('dialog.browser').close()")
        added = wait_for("the added plugin", lambda: len(names()) == 2 and names(), 10)
        steps.append(f"added: {added}")
        new = added[1] if added else None
        if new:
            # Added last, it is folded: unfolded by its name.
            fold = f'li.plugin[data-engine="fx"][data-plugin="{new}"] button.fold'
            wait_for("the added plugin on the page", lambda: css(d, f'li.plugin[data-engine="fx"][data-plugin="{new}"]'), 10)
            if any(b.get_attribute("aria-expanded") != "true" for b in d.find_elements("css selector", fold)):
                click(d, fold)
            click(d, f'li.plugin[data-engine="fx"][data-plugin="{new}"] button[aria-label$="earlier"]')
            moved = wait_for("the move", lambda: names() == [new, "amp"] and names(), 10)
            steps.append(f"moved first: {moved}")
            remove = f'li.plugin[data-engine="fx"][data-plugin="{new}"] button.danger'
            wait_for("the moved plugin on the page", lambda: css(d, remove).text == "Remove", 10)
            time.sleep(0.5)
            click(d, remove)
            click(d, remove)     # a second press confirms
            removed = wait_for("the removal", lambda: names() == ["amp"] and names(), 10)
            steps.append(f"removed: {removed}")
        on_page = "return [...document.querySelectorAll('li.plugin[data-engine=\"fx\"]')].map((li) => li.dataset.plugin)"
        # The page reads the chain again when the removal is answered: a moment after the server has it.
        wait_for("the page to show the chain", lambda: d.execute_script(on_page) == ["amp"], 5)
        shown = d.execute_script(on_page)
        check("chain", len(steps) == 3 and all(not st.endswith("None") for st in steps) and shown == ["amp"],
              "; ".join(steps) + f"; the page shows {shown}")

    # Pin the gain: kept by the server (every device sees it), shown on the favourites tab.
    click(d, '.control[data-key="fx/amp/gain"] .pin')
    stored = wait_for("the stored favourite", lambda: {"engine": "fx", "plugin": "amp", "symbol": "gain"}
                      in rig.api("favourites"), 5) if "favourites" not in d.execute_script(
                          "return [...tandem.store.missing]") else None
    tab(d, "favourites")
    listed = wait_for("the favourites tab", lambda: d.find_elements("css selector", 'li.favourite[data-key="fx/amp/gain"] input[type="range"]'), 5)
    check("favourites", bool(listed) and (stored or "favourites" in d.execute_script("return [...tandem.store.missing]")),
          "fx amp gain pinned; " + ("GET /api/favourites has it" if stored else "kept in the browser (no /api/favourites)")
          + ("; the favourites tab shows its slider" if listed else "; the favourites tab does not show it"))

    openapi_check(d, "the Overview, Racks, Graph, Presets and Favourites tabs used")
    errors = console_errors(d)
    d.quit()
    rig.drivers.remove(d)

    if rig.args.firefox and (shutil.which("firefox-esr") or shutil.which("firefox")):
        firefox_check(rig, signal_rms)
    elif rig.args.firefox:
        say("SKIP firefox: no firefox-esr or firefox installed (apt-get install firefox-esr)")

    # Ten pages open; a take recorded meanwhile, started and stopped from one of them.
    many = rig.browser()
    handles = []
    for i in range(PAGES):
        if i:
            many.switch_to.new_window("window")
        open_page(many, rig.base)
        handles.append(many.current_window_handle)
    flowing = 0
    for h in handles:
        many.switch_to.window(h)
        n0 = many.execute_script("return tandem.store.meterMessages")
        time.sleep(0.2)
        if many.execute_script("return tandem.store.meterMessages") > n0 and \
                many.execute_script("return document.visibilityState") == "visible":
            flowing += 1
    many.switch_to.window(handles[0])
    before_take = rig.api("status")
    # The marker check's take is in the list already: this one is the take that was not.
    takes_before = {t["id"] for t in rig.api("takes")}
    css(many, "#rec-start").click()
    wait_for("the take to start", lambda: rig.api("status")["recorder"]["recording"], 5)
    loaded, browsers = cpu_share(pid, CPU_SECONDS)
    load = os.getloadavg()[0]
    css(many, "#rec-stop").click()
    wait_for("the take to end", lambda: not rig.api("status")["recorder"]["recording"], 10)
    errors += console_errors(many)
    many.quit()
    rig.drivers.remove(many)
    added = loaded - idle
    check("cpu", flowing == PAGES and added < CPU_PER_PAGE_LIMIT * PAGES,
          f"Tandem used {idle:.2f} % of one core with no page and {loaded:.2f} % with {PAGES} pages "
          f"({flowing} of them receiving meters at 20 a second): {added:+.2f} points (limit {CPU_PER_PAGE_LIMIT * PAGES:.0f}, {added / PAGES:.2f} a page); "
          f"the browsers used {browsers:.0f} %, load average {load:.1f} on {os.cpu_count()} cores")

    # The take: bit-exact against the signal, listed on the page, downloaded bit-exact.
    d = rig.browser(downloads=downloads)
    open_page(d, rig.base)
    d.execute_script("window.__pageTestMark = 'same page'")
    take = wait_for("the take's report", lambda: next((t for t in rig.api("takes") if t["id"] not in takes_before),
                                                      None), 10)
    path = take["files"][0]
    channels, samples = read_wav(path)
    first = samples[0::channels]
    exact, detail = bit_exact(first, signal_one)
    report = rig.api(f"takes/{take['id']}")
    if not exact:
        after_take = rig.api("status")
        detail += "; during the take the player missed {} and underran {} frames, the recorder counted {} xruns".format(
            after_take["player"]["missedFrames"] - before_take["player"]["missedFrames"],
            after_take["player"]["underrunFrames"] - before_take["player"]["underrunFrames"],
            after_take["recorder"]["xruns"] - before_take["recorder"]["xruns"])
    if not exact and report.get("drops"):
        detail += " (the report's gaps, at take frames: " + ", ".join(
            f"{g['atFrame']}+{g['frames']} {g['cause']}" for g in report["drops"][:8]) + \
            f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: the server ran cycles without Tandem)"
    check("take", exact, f"take {take['take']}: {len(first)} frames ({len(first) / RATE:.1f} s) recorded with "
          f"{PAGES} pages open; {detail}; its report: {report.get('xruns')} xruns, {report.get('droppedFrames')} "
          f"dropped and {report.get('missedFrames')} missed frames, {len(report.get('drops') or [])} gaps")
    tab(d, "takes")
    item = wait_for("the take in the list", lambda: css(d, f'li.take[data-id="{take["id"]}"]'), 10)
    link = item.find_element("css selector", 'a[data-file="0"]')
    link.click()
    name = os.path.basename(path)
    got = wait_for("the download", lambda: os.path.exists(os.path.join(downloads, name))
                   and not os.path.exists(os.path.join(downloads, name + ".crdownload"))
                   and os.path.getsize(os.path.join(downloads, name)) == os.path.getsize(path), 20)
    same = bool(got) and sha(os.path.join(downloads, name)) == sha(path)
    check("download", bool(item) and same,
          f"take {take['take']} listed; downloaded {os.path.getsize(path)} bytes, sha256 "
          f"{'equal to' if same else 'DIFFERENT from'} the file on disk")

    # Played in the page: the <audio> element reads the file by ranges and seeks in it.
    audio = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const a = document.querySelector(`li.take[data-id="${arguments[0]}"] audio`);
        a.muted = true;
        a.preload = "auto";
        a.addEventListener("error", () => done({error: a.error && a.error.code}));
        a.addEventListener("loadedmetadata", () => {
            a.addEventListener("seeked", () => done({duration: a.duration, at: a.currentTime,
                seekable: a.seekable.length ? a.seekable.end(0) : 0}), {once: true});
            a.currentTime = a.duration / 2;
        }, {once: true});
        a.load();
        setTimeout(() => done({error: "timeout"}), 15000);
    """, take["id"])
    seconds = len(first) / RATE
    check("audio", "duration" in audio and abs(audio["duration"] - seconds) < 0.05 and abs(audio["at"] - seconds / 2) < 0.1
          and audio["seekable"] >= seconds - 0.05,
          f"the page's player read {audio.get('duration', 0):.2f} s of the {seconds:.2f} s take, seekable to "
          f"{audio.get('seekable', 0):.2f} s, and sought to {audio.get('at', 0):.2f} s" if "duration" in audio
          else f"the page's player failed: {audio}")

    many_plugins_part(rig)
    scenes_part(rig)

    if rig.args.screenshots:
        # A take running and something pinned make the pictures say more.
        tab(d, "overview")
        css(d, "#rec-start").click()
        time.sleep(1.5)
        rig.api("recorder/mark", method="POST", body={"label": "verse 2"})
        time.sleep(0.5)
        screenshots(rig, d, os.path.join(ROOT, "docs", "screenshots"))
        tab(d, "overview")
        css(d, "#rec-stop").click()
        wait_for("the take to end", lambda: not rig.api("status")["recorder"]["recording"], 10)
        tab(d, "overview")

    # The JACK server goes away and comes back: the same page shows it.
    tab(d, "overview")
    t0 = time.monotonic()
    rig.stop_jack(signal.SIGKILL)
    lost = wait_for("the page to show the server lost", lambda: css(d, "#link").get_attribute("data-state") == "lost", 15)
    lost_after = time.monotonic() - t0
    time.sleep(1)
    t1 = time.monotonic()
    rig.start_jack()
    back = wait_for("the page to show the session again", lambda: css(d, "#link").get_attribute("data-state") == "live"
                    and abs(float(css(d, '.meter[data-port="in_1"]').get_attribute("data-rms")) - signal_rms) < 1, 60)
    back_after = time.monotonic() - t1
    # A session that did not come back may show no meter at all.
    back_rms = next((e.text for e in d.find_elements("css selector", '.meter[data-port="in_1"] .rms-db')), "no meter")
    if not back:
        say("  the page then: " + json.dumps(d.execute_script(
            "return {link: document.querySelector('#link').dataset.state, stream: tandem.store.stream, "
            "serverLost: tandem.store.status && tandem.store.status.serverLost, meters: tandem.store.meters, "
            "meterMessages: tandem.store.meterMessages}")))
        try:
            st = rig.api("status")
            say(f"  the server then: serverLost {st['serverLost']}, meters {st['meters']}, player playing "
                f"{st.get('player') and st['player']['playing']}, workers {st.get('workers')}")
        except (OSError, ValueError) as e:
            say(f"  the server then: GET /api/status failed: {e}")
        lsp = subprocess.run(["jack_lsp", "-c"], env=rig.env, capture_output=True, text=True, timeout=10)
        say("  jack_lsp -c then: " + " | ".join(lsp.stdout.split("\n")[:30]) + lsp.stderr.strip()[:300])
    tab(d, "graph")
    graph_back = wait_for("the graph's connections", lambda: d.find_elements(
        "css selector", 'li[data-from="pt-play:out_1"][data-to="pt-rec:in_1"]'), 10)
    same_page = d.execute_script("return window.__pageTestMark") == "same page"
    check("restart", bool(lost) and bool(back) and bool(graph_back) and same_page,
          (f"page showed the server lost {lost_after:.1f} s after jackd was killed" if lost else "never showed it lost")
          + (f"; live again with in_1 at {back_rms} dB RMS {back_after:.1f} s after "
             "jackd started again" if back else "; never live again")
          + ("; the graph shows the rules' connections" if graph_back else "; the graph lacks the connections")
          + ("; no reload" if same_page else "; the page was reloaded"))

    errors += console_errors(d)
    allowed, real = [], []
    for e in errors:
        probe_path = allowed_probe(rig, e["message"])
        after = [name for at, name in marks if at <= e["timestamp"]][-1]
        (allowed if probe_path else real).append(probe_path or f"{e['message']} (after {after})")
    check("console", not real, f"{len(real)} console error(s)" + (": " + " | ".join(real[:5]) if real else "")
          + (f"; allowed: 404 of route(s) this server lacks, which the page probes once: {', '.join(sorted(set(allowed)))}"
             if allowed else ""))


def loudness_check(rig, d):
    """The Loudness card (EBU R128): a row for each programme the status measures, with its numbers."""
    name = "recorder in_1+in_2"
    sel = f'.loudness .meter[data-programme="{name}"]'
    wait_for("the loudness numbers", lambda: css(d, sel + " .lufs-tp").text not in ("", "–"), 10)
    shown_tp = float(css(d, sel + " .lufs-tp").text)
    programmes = {f'{p["engine"]} {"+".join(p["channels"])}': p for p in rig.api("status").get("loudness", [])}
    api_tp = programmes.get(name, {}).get("truePeak")
    rows = d.execute_script("return [...document.querySelectorAll('.loudness .meter')].map(e => e.dataset.programme)")
    target = d.execute_script("return document.querySelectorAll('.loudness .bar > .target').length")
    check("loudness", api_tp is not None and abs(shown_tp - api_tp) <= 0.1 and set(rows) == set(programmes)
          and target == len(rows),
          f"the Loudness card shows {sorted(rows)} with {target} target lines; {name}: true peak {shown_tp} dBTP "
          f"on the page, {api_tp} in the status")


def stop_briefly(rig, what, counter, tries=3):
    """Stops the session's process for 60 ms (SIGSTOP, SIGCONT), so the server runs cycles without it, until
    `counter(status)` grows: (before, after), or None when three stops did not move it."""
    before = counter(rig.api("status"))
    for _ in range(tries):
        rig.tandem.send_signal(signal.SIGSTOP)
        time.sleep(0.06)
        rig.tandem.send_signal(signal.SIGCONT)
        after = wait_for(what, lambda: counter(rig.api("status")) > before and counter(rig.api("status")), 3)
        if after:
            return before, after
    return None


def armed_check(rig, d):
    """Missed frames are a take's loss only: while the recorder is only armed (metering, writing nothing) the page
    shows none, though the status counts them since the session started; during a take it shows the take's."""
    tab(d, "overview")
    missed = lambda s: s["recorder"]["missedFrames"]
    panel = lambda: css(d, "#panel-overview").text
    losses = lambda: next((e.text for e in d.find_elements("css selector", "#rec-losses")), "(no #rec-losses)")
    armed = stop_briefly(rig, "missed frames while armed", missed)
    # The page reads the status every 2 s, and draws it as it reads it: waited for until it has read these.
    if armed:
        wait_for("the page to read the missed frames", lambda: d.execute_script(
            "return tandem.store.status.recorder.missedFrames") >= armed[1], 6)
    shown_armed = [line for line in panel().split("\n") if "missed" in line.lower()]
    losses_armed = losses()
    rig.api("recorder/start", method="POST")
    wait_for("the take", lambda: rig.api("status")["recorder"]["recording"], 10)
    wait_for("the page to show the take", lambda: css(d, "#rec-state").get_attribute("data-state") == "recording", 10)
    during = stop_briefly(rig, "missed frames in the take", missed)
    want = during[1] - during[0] if during else None
    shown_take = wait_for("the take's missed frames on the page", lambda: want is not None
                          and f"missed {want} frames" in losses() and losses(), 8)
    rig.api("recorder/stop", method="POST")
    wait_for("the take to end", lambda: not rig.api("status")["recorder"]["recording"], 10)
    take = max((t["take"] for t in rig.api("takes")), default=None)
    wait_for("its report", lambda: any(t["take"] == take for t in rig.api("takes")), 10)
    check("armed", bool(armed) and not shown_armed and bool(shown_take),
          (f"the session stopped 60 ms while armed: the status's missedFrames went {armed[0]} -> {armed[1]}; "
           if armed else "no missed frames could be made while armed; ")
          + (f"the page shows {shown_armed!r}" if shown_armed else f"the page shows no 'missed' (Losses: {losses_armed!r})")
          + (f"; stopped again during take {take}: {want} frames missed, the page shows {shown_take!r}" if shown_take
             else f"; during a take the page showed {losses()!r} (the status counted {want})"))


def toast_check(d):
    """A toast (the preset switch's) is gone when the tab changes, and never lay over the tab bar."""
    shown = d.execute_script("""const t = document.getElementById('toast'), n = document.querySelector('nav.tabs');
        const a = t.getBoundingClientRect(), b = n.getBoundingClientRect();
        return {show: t.classList.contains('show'), text: t.textContent,
                overlap: Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top))};""")
    tab(d, "racks")
    after = d.execute_script("const t = document.getElementById('toast'); return {show: t.classList.contains('show'), "
                             "text: t.textContent, opacity: getComputedStyle(t).opacity}")
    check("toast", shown["show"] and shown["overlap"] == 0 and not after["show"] and not after["text"],
          f"a toast showed {shown['text']!r} ({shown['overlap']:.0f} px over the tab bar); after a tab change "
          + ("it is gone" if not after["show"] and not after["text"] else f"it still shows {after['text']!r}"))


def openapi_check(d, what, name="openapi"):
    """The page never fetched the OpenAPI document (it needs nothing from it)."""
    names = d.execute_script("return performance.getEntriesByType('resource').map((e) => e.name)")
    got = [n for n in names if "openapi" in n]
    check(name, not got, f"{what}: {len(names)} requests, {len(got)} of the OpenAPI document"
          + (f" ({got[0]})" if got else ""))


SITE_FRAME = """<!doctype html><meta charset="utf-8"><title>another site</title><h1>another site</h1>
<iframe id="tandem" src="{src}" width="900" height="600"></iframe>"""
SITE_BLANK = """<!doctype html><meta charset="utf-8"><title>another site</title><p>fetches are made from here</p>"""


class Site:
    """A site of another origin: Python's http.server on a loopback port, in a thread of this process. `/` iframes
    `framed` (Tandem's page); `/blank` is an empty page to run fetches from. It sends no security headers itself."""

    def __init__(self, port, framed):
        import http.server
        pages = {"/": SITE_FRAME.format(src=framed).encode(), "/blank": SITE_BLANK.encode()}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = pages.get(self.path, b"")
                self.send_response(200 if body else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def raw_request(port, method, path, headers=(), timeout=5):
    """One request on its own connection (`Connection: close`), every byte the server sends read until it closes:
    (status, header fields lower-cased, body bytes). Raw, so that a body sent with a HEAD answer would show (urllib
    and http.client drop it)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers]
    data = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        c.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    first, *rest = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in rest:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    return int(first.split()[1]), fields, body


FETCH = """const done = arguments[arguments.length - 1];
fetch(arguments[0], {headers: arguments[1]}).then(async (r) => {
    const text = await r.text();
    let keys = null;
    try { keys = Object.keys(JSON.parse(text)); } catch (e) { }
    done({status: r.status, keys: keys});
}, (e) => done({error: String(e)}));"""


def frame_document(d, want_live, timeout):
    """The document in the site's iframe, read from inside it (chromedriver switches into a frame of another
    origin): its address, title, and whether Tandem's page runs there (`window.tandem`, its event stream live).
    With `want_live` it waits for the page to go live; else for the frame to have loaded anything at all."""
    seen = {}

    def look():
        d.switch_to.default_content()
        d.switch_to.frame(css(d, "iframe#tandem"))
        try:
            seen.update(d.execute_script("""return {href: location.href, title: document.title,
                tandem: !!window.tandem, live: !!(window.tandem && tandem.store.stream === 'live'),
                text: (document.body ? document.body.innerText : '').slice(0, 80)}"""))
        finally:
            d.switch_to.default_content()
        return seen["live"] if want_live else seen["href"] not in ("", "about:blank")
    wait_for("the framed document", look, timeout, every=0.2)
    return seen


def security_part(rig):
    """Issue 44's browser side: the page framed by an origin http_origins does not list does not render (the
    browser refuses it by frame-ancestors), and renders and runs when framed by one it lists; a fetch with the token
    in the Authorization header (so preflighted) succeeds from the listed origin and fails from another; HEAD
    answers as GET does, with no body."""
    started = time.monotonic()
    d = rig.browser()
    listed, foreign = Site(rig.origin_port, rig.base + "/"), Site(rig.foreign_port, rig.base + "/")
    try:
        sent = raw_request(rig.port, "GET", "/")[1]
        ancestors = re.search(r"frame-ancestors ([^;]*)", sent.get("content-security-policy", ""))
        ancestors = ancestors.group(1) if ancestors else None
        xfo = sent.get("x-frame-options")

        # Framed by an origin not listed: the browser refuses to render it.
        d.get_log("browser")
        t0 = time.monotonic()
        d.get(foreign.url + "/")
        refused = frame_document(d, False, 10)
        time.sleep(1)   # time enough for a page that did render to go live: it must not have
        refused = frame_document(d, False, 2) or refused
        took = time.monotonic() - t0
        said = [e["message"] for e in d.get_log("browser") if "frame-ancestors" in e["message"]]
        check("framing", ancestors == rig.origin and xfo == "DENY" and not refused.get("tandem")
              and refused.get("href", "").startswith("chrome-error:") and bool(said),
              f"the page says frame-ancestors {ancestors}, X-Frame-Options {xfo}; framed by {foreign.url} (not "
              f"listed) its frame holds {refused.get('href')!r} (Tandem's page "
              + ("RUNS there" if refused.get("tandem") else "not there") + f", {took:.1f} s); the console: "
              + (repr(said[0][:200]) if said else "no frame-ancestors refusal"))

        # Framed by the origin http_origins lists: it renders and runs (its event stream goes live).
        t0 = time.monotonic()
        d.get(listed.url + "/")
        allowed = frame_document(d, True, 15)
        took = time.monotonic() - t0
        said = [e["message"] for e in d.get_log("browser") if "frame-ancestors" in e["message"]]
        check("framing allowed", bool(allowed.get("live")) and allowed.get("href", "").startswith(rig.base + "/") and not said,
              f"framed by {listed.url} (listed in http_origins) its frame holds {allowed.get('href')!r} "
              f"({allowed.get('title')!r}), Tandem's page " + ("live" if allowed.get("live") else "NOT live")
              + f" {took:.1f} s after the load; " + (f"the console: {said[0][:160]!r}" if said else "no refusal"))

        # The token in the Authorization header, so a preflight first; the session is on loopback, where the
        # server needs no token and ignores one: what is proven is that the browser may send the header.
        headers = {"Authorization": "Bearer page-test-token"}
        status_url = rig.base + "/api/status"
        d.get(listed.url + "/blank")
        ok = d.execute_async_script(FETCH, status_url, headers)
        d.get_log("browser")
        d.get(foreign.url + "/blank")
        bad = d.execute_async_script(FETCH, status_url, headers)
        said = [e["message"] for e in d.get_log("browser") if "CORS" in e["message"]]
        pre = {}
        for name, origin in (("listed", listed.url), ("foreign", foreign.url)):
            st, f, _ = raw_request(rig.port, "OPTIONS", "/api/status", [
                ("Origin", origin), ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "authorization")])
            pre[name] = (st, f.get("access-control-allow-origin"), f.get("access-control-allow-headers"))
        # The answer itself (which the browser let the script read only because it names the listed origin).
        answer = raw_request(rig.port, "GET", "/api/status", [("Origin", listed.url), ("Authorization", "Bearer x")])
        check("cors", ok.get("status") == 200 and "recorder" in (ok.get("keys") or []) and "error" in bad
              and pre["listed"][:2] == (204, listed.url) and pre["foreign"][1] is None,
              f"fetch(/api/status) with Authorization: Bearer from {listed.url} (listed): "
              + (f"{ok['status']}, a status of {len(ok['keys'] or [])} keys read (the answer carries "
                 f"Access-Control-Allow-Origin {answer[1].get('access-control-allow-origin')})" if "status" in ok
                 else f"failed: {ok.get('error')}")
              + f"; from {foreign.url} (not listed): " + (bad.get("error") or f"ANSWERED {bad.get('status')}")
              + (f" ({said[0][said[0].find('has been blocked'):][:150]!r})" if said else "")
              + f"; the preflight (OPTIONS, Access-Control-Request-Headers: authorization) answered "
              f"{pre['listed'][0]} allowing {pre['listed'][2]!r} to the listed origin, {pre['foreign'][0]} with "
              f"Access-Control-Allow-Origin {pre['foreign'][1]} to the other")
    finally:
        listed.close()
        foreign.close()
        d.quit()
        rig.drivers.remove(d)

    # HEAD where GET works: the same status and headers, no body (a 404 too).
    rows, good = [], True
    for path in ("/", "/page/main.js", "/page/style.css", "/api/status", "/metrics", "/api/takes", "/api/nowhere"):
        g_status, g_fields, g_body = raw_request(rig.port, "GET", path)
        h_status, h_fields, h_body = raw_request(rig.port, "HEAD", path)
        static = path.startswith("/page/") or path == "/"
        length = h_fields.get("content-length")
        same = (h_status == g_status and not h_body and length is not None
                and (int(length) == len(g_body) or not static)
                and h_fields.get("content-type") == g_fields.get("content-type")
                and h_fields.get("x-frame-options") == "DENY")
        good = good and same
        rows.append(f"{path} {h_status}/{g_status} Content-Length {length}/{len(g_body)} body {len(h_body)}"
                    + ("" if same else " (DIFFERS)"))
    check("head", good, "HEAD/GET: " + "; ".join(rows))
    say(f"  the security part took {time.monotonic() - started:.1f} s")


MANY_HEAD = """# Written by scripts/page-test.py: 3 racks of 10 plugins, the Racks tab on a phone.
[session]
name = "racks"
directory = "{dir}"
server = "{server}"
"""


def many_preset(directory, server):
    out = [MANY_HEAD.format(dir=directory, server=server)]
    for rack in MANY_RACKS:
        out.append(f'\n[[rack]]\nname = "{rack}"\nisolate = false\ninputs = 1\noutputs = 1\n')
        for uri, name in MANY_PLUGINS:
            out.append(f'[[rack.plugins]]\nuri = "{uri}"\nname = "{name}"\n')
    return "".join(out)


# Every rack shown, no filter (as a user who chose "All" and emptied the filter left it).
SHOW_ALL = """const s = document.getElementById('racks-show'); if (s) { s.value = ''; s.dispatchEvent(new Event('change')); }
    const f = document.getElementById('controls-filter'); if (f) { f.value = ''; f.dispatchEvent(new Event('input')); }
"""


# Where a control is on the screen, and whether it is there to be used: between the bars, and the topmost element at
# its centre (nothing over it).
ON_SCREEN = """
const el = arguments[0];
const target = el.querySelector('input[type=range], select, input[type=checkbox]') || el;
const r = target.getBoundingClientRect();
const bar = (document.querySelector('.racks-bar') || document.querySelector('header.top')).getBoundingClientRect();
const tabs = document.querySelector('nav.tabs').getBoundingClientRect();
const top = Math.max(bar.bottom, document.querySelector('header.top').getBoundingClientRect().bottom);
const bottom = tabs.top > innerHeight / 2 ? tabs.top : innerHeight;
const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
return {top: Math.round(r.top), bottom: Math.round(r.bottom), from: Math.round(top), to: Math.round(bottom),
        ok: r.height > 0 && r.top >= top && r.bottom <= bottom && !!hit && (hit === target || target.contains(hit))};
"""


def reach(d, base, engine, plugin, control, last_step):
    """From the Overview (every rack shown, no filter, at the top), the actions a user takes to have the control on
    screen: the Racks tab; its plugin in the Show list; then `last_step` ("filter": its name typed in the filter,
    "swipe": one swipe to the end). Returns (actions, where it is, whether it took a key press)."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
    tab(d, "overview")
    d.execute_script(SHOW_ALL + "window.scrollTo(0, 0);")
    sel = f'.control[data-key="{engine}/{plugin}/{control["symbol"]}"]'
    actions = []

    def where():
        els = [e for e in d.find_elements("css selector", sel)]
        return d.execute_script(ON_SCREEN, els[0]) if els else {"ok": False}
    steps = [("the Racks tab", lambda: tab(d, "racks")),
             (f"{engine} › {plugin} in the Show list",
              lambda: Select(css(d, "#racks-show")).select_by_value(f"p:{engine}/{plugin}"))]
    if last_step == "filter":
        words = control["name"].lower()
        steps.append((f"'{words}' typed in the filter", lambda: css(d, "#controls-filter").send_keys(words)))
    else:
        steps.append(("one swipe to the end", lambda: d.execute_script(
            "window.scrollTo(0, document.scrollingElement.scrollHeight)")))
    at = {"ok": False}
    for name, act in steps:
        try:
            act()
        except Exception as e:  # noqa: BLE001  (a page without the bar: the step cannot be taken)
            actions.append(f"{name}: impossible ({type(e).__name__})")
            break
        actions.append(name)
        time.sleep(0.15)
        at = wait_for(f"{sel} on screen", lambda: where()["ok"] and where(), 1) or where()
        if at["ok"]:
            break
    used = False
    if at["ok"]:
        route = f"engines/{engine}/plugins/{plugin}/controls/{control['symbol']}"
        before = api_at(base, route)["value"]
        box = css(d, sel + ' input[type="range"], ' + sel + " select, " + sel + ' input[type="checkbox"]')
        if box.tag_name == "select":
            from selenium.webdriver.support.ui import Select as S
            S(box).select_by_index(1 if S(box).first_selected_option.get_attribute("index") == "0" else 0)
        elif box.get_attribute("type") == "checkbox":
            box.click()
        else:
            box.send_keys(Keys.ARROW_RIGHT)
        used = bool(wait_for("the control's new value", lambda: api_at(base, route)["value"] != before, 5))
    return actions, at, used


def many_plugins_part(rig):
    """A second session on the same server with 3 racks of 10 plugins, its Racks tab in a 390x844 phone screen:
    folds, three actions to any control, where-you-are, value boxes."""
    folder = os.path.join(rig.dir, "racks")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "racks.toml")
    with open(path, "w") as f:
        f.write(many_preset(folder, rig.server))
    port = free_port()
    log = open(os.path.join(folder, "tandem.log"), "ab")
    t0 = time.monotonic()
    proc = subprocess.Popen([rig.args.tandem, "run", path, "--http", f"127.0.0.1:{port}", "--control-port",
                             str(free_port(socket.SOCK_DGRAM)), "--no-view"], cwd=folder, stdout=log, stderr=log,
                            env=rig.env)
    rig.extra.append(proc)
    base = f"http://127.0.0.1:{port}"
    up = wait_for("the 30-plugin session", lambda: proc.poll() is not None or (
        len(api_at(base, "status").get("racks", [])) == len(MANY_RACKS)
        and all(r.get("running") for r in api_at(base, "status")["racks"])), 90, every=0.3)
    if proc.poll() is not None:
        up = None
    if not up:
        raise SetupError(f"the 30-plugin session did not start within 90 s; see {log.name}")
    plugins = {(p["engine"], p["name"]): p for p in api_at(base, "plugins")}
    controls = sum(len(p["controls"]) for p in plugins.values())
    say(f"  30-plugin session: {len(plugins)} plugins, {controls} controls, up in {time.monotonic() - t0:.1f} s")

    d = rig.browser(*PHONE)
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True})
    t0 = time.monotonic()
    open_page(d, base)
    tab(d, "racks")
    drawn = wait_for("the racks drawn", lambda: len(d.find_elements("css selector", "li.plugin")) == len(plugins), 20)
    took = time.monotonic() - t0
    folds = d.execute_script("return [...document.querySelectorAll('button.fold')].map((b) => b.getAttribute('aria-expanded'))")
    items = len(d.find_elements("css selector", "li.plugin"))
    height = d.execute_script("return document.scrollingElement.scrollHeight")
    # A fold opened by hand is kept: the third plugin of the first rack, opened, the page loaded again.
    third = f'li.plugin[data-engine="{MANY_RACKS[0]}"][data-plugin="{MANY_PLUGINS[2][1]}"] button.fold'
    kept = False
    if d.find_elements("css selector", third):
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", css(d, third))
        click(d, third)
        d.refresh()
        open_page(d, base)
        tab(d, "racks")
        wait_for("the racks drawn again", lambda: len(d.find_elements("css selector", "li.plugin")) == len(plugins), 20)
        kept = css(d, third).get_attribute("aria-expanded") == "true"
        d.execute_script("arguments[0].scrollIntoView({block: 'center'})", css(d, third))
        click(d, third)
    check("racks folds", bool(drawn) and folds.count("true") == 1 and folds[0] == "true" and len(folds) == len(plugins)
          and kept,
          f"{items} plugins drawn {took:.1f} s after the page opened, {len(folds)} foldable, {folds.count('true')} "
          f"unfolded (the first; "
          f"{MANY_PLUGINS[0][1]}: {len(plugins[(MANY_RACKS[0], MANY_PLUGINS[0][1])]['controls'])} controls); the "
          f"Racks tab is {height} px tall on a {PHONE[0]}x{PHONE[1]} screen; a fold opened "
          + ("stays open after a reload" if kept else "was NOT kept over a reload"))

    # Any control in at most three actions: the last plugin's last control of the last rack (by the filter, and by
    # a swipe), an EQ's band-1 gain in the middle rack, the last control of the largest plugin of the first rack.
    last_rack, last_plugin = MANY_RACKS[-1], MANY_PLUGINS[-1][1]
    hermes = plugins[(MANY_RACKS[0], "hermes")]["controls"]
    gain1 = next(c for c in plugins[(MANY_RACKS[1], "eq")]["controls"] if c["symbol"] == "gain1")
    targets = [(last_rack, last_plugin, plugins[(last_rack, last_plugin)]["controls"][-1], "filter"),
               (last_rack, last_plugin, plugins[(last_rack, last_plugin)]["controls"][-1], "swipe"),
               (MANY_RACKS[1], "eq", gain1, "filter"),
               (MANY_RACKS[0], "hermes", hermes[-1], "filter")]
    results = []
    for engine, plugin, control, how in targets:
        actions, at, used = reach(d, base, engine, plugin, control, how)
        results.append((engine, plugin, control, actions, at, used))
    worst = max(len(r[3]) for r in results)
    ok = all(r[4]["ok"] and r[5] and len(r[3]) <= 3 for r in results)
    check("racks reach", ok, f"most actions needed: {worst}; " + "; ".join(
        f"{e} › {p} › {c['name']!r}: {len(a)} action(s) ({', '.join(a)}), then at y {at.get('top')}-{at.get('bottom')}"
        f" between the bars ({at.get('from')}-{at.get('to')}) " + ("and a key moved it" if used else "NOT usable")
        for e, p, c, a, at, used in results))

    # Where you are: every rack shown, the fourth plugin of the middle rack scrolled to just under the bar.
    d.execute_script(SHOW_ALL)
    item = css(d, f'li.plugin[data-engine="{MANY_RACKS[1]}"][data-plugin="{MANY_PLUGINS[3][1]}"]')
    d.execute_script("window.scrollBy(0, arguments[0].getBoundingClientRect().top - (document.querySelector("
                     "'.racks-bar') || document.querySelector('header.top')).getBoundingClientRect().bottom)", item)
    want = f"All · at {MANY_RACKS[1]} › 4. {MANY_PLUGINS[3][1]}"
    reads = lambda: next((e.text for e in d.find_elements("css selector", "#racks-show option:checked")), None)
    said = wait_for("the Show list to say where", lambda: want in (reads() or "") and reads(), 3)
    check("racks where", bool(said), f"scrolled to {MANY_RACKS[1]}'s 4th plugin: the Show list reads {reads()!r}")

    # Value boxes: the EQ's resonance shows its scale point's label whole.
    d.execute_script(f"""const s = document.getElementById('racks-show');
        if (s) {{ s.value = 'p:{last_rack}/eq'; s.dispatchEvent(new Event('change')); }}""")
    boxes = d.execute_script("""return [...document.querySelectorAll('li.plugin:not([hidden]) .control .value')]
        .filter((b) => b.offsetParent).map((b) => [b.closest('.control').dataset.key.split('/').pop(), b.value,
        b.scrollWidth <= b.clientWidth + 1, b.getBoundingClientRect().right <= innerWidth])""")
    hpq = next((b for b in boxes if b[0] == "HPQ"), None)
    cut = [b for b in boxes if not (b[2] and b[3])]
    check("value box", bool(hpq) and hpq[1] == "-3dB @freq, flat" and not cut,
          f"{len(boxes)} value boxes of {last_rack}'s EQ at {PHONE[0]} px: HPQ shows {hpq[1] if hpq else None!r}, "
          f"{len(cut)} cut or off the screen" + (f": {cut[:3]}" if cut else ""))
    openapi_check(d, "the 30-plugin page loaded twice, its Racks tab used", "racks openapi")

    if rig.args.screenshots:
        out = os.path.join(ROOT, "docs", "screenshots")
        d.execute_script("""const s = document.getElementById('racks-show'); s.value = '';
            s.dispatchEvent(new Event('change')); window.scrollTo(0, 0);""")
        time.sleep(0.8)
        d.save_screenshot(os.path.join(out, "racks-30-plugins-390x844.png"))
        d.execute_script(f"""const s = document.getElementById('racks-show'); s.value = 'p:{last_rack}/eq';
            s.dispatchEvent(new Event('change'));""")
        time.sleep(0.8)
        d.save_screenshot(os.path.join(out, "racks-30-plugins-eq-390x844.png"))
        css(d, "#controls-filter").send_keys("resonance")
        time.sleep(0.5)
        d.save_screenshot(os.path.join(out, "racks-30-plugins-filter-390x844.png"))
        d.execute_script(SHOW_ALL)
        say("  screenshot docs/screenshots/racks-30-plugins-390x844.png, racks-30-plugins-eq-390x844.png, "
            "racks-30-plugins-filter-390x844.png")
    errors = [e["message"] for e in console_errors(d)]
    d.quit()
    rig.drivers.remove(d)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    check("racks console", not errors, f"{len(errors)} console error(s) on the 30-plugin page"
          + (": " + " | ".join(errors[:3]) if errors else ""))


# ---------------------------------------------------------------------------------------------------------------------
# The scenes part: a session of its own, its page at 390x844.
# ---------------------------------------------------------------------------------------------------------------------

# A name with a space and beyond ASCII, which reaches the server percent-encoded in the route's path.
SOFT = "soft é"
SCENES_PRESET = """# Written by scripts/page-test.py (the scenes part).
[session]
name = "scenes"
directory = "{dir}"
server = "{server}"

[player]
client = "ps-play"
channels = 1
queue = ["signal.wav"]
loop = "item"

[[rack]]
name = "stage"
isolate = false
inputs = 1
outputs = 1
[[rack.plugins]]
uri = "{amp}"
name = "amp"
controls = {{ gain = 0.0 }}

[[scene]]
name = "loud"
ramp_ms = 20
[scene.values]
"stage/amp/gain" = 0.0

[[scene]]
name = "{soft}"
ramp_ms = 20
[scene.values]
"stage/amp/gain" = -20.0

[[map]]
program = true
scenes = []

[[connect]]
from = "ps-play:out_1"
to = "stage:in_1"
"""

LIT = "const b = document.querySelector('#scenes button.scene[aria-pressed=\"true\"]'); return b ? b.dataset.scene : null"


def scenes_part(rig):
    """A session of its own with two scenes of an in-process rack's amp (0 and -20 dB) and a program-change map,
    its page in a 390x844 phone screen: the scene buttons, a tap heard in the rack's output, recalls by OSC and MIDI
    and an edit by another client shown."""
    folder = os.path.join(rig.dir, "scenes")
    os.makedirs(folder, exist_ok=True)
    test_signal(os.path.join(folder, "signal.wav"), seconds=2)
    path = os.path.join(folder, "scenes.toml")
    with open(path, "w") as f:
        f.write(SCENES_PRESET.format(dir=folder, server=rig.server, amp=AMP, soft=SOFT))
    port, osc_port = free_port(), free_port(socket.SOCK_DGRAM)
    log = open(os.path.join(folder, "tandem.log"), "ab")
    proc = subprocess.Popen([rig.args.tandem, "run", path, "--http", f"127.0.0.1:{port}", "--control-port",
                             str(osc_port), "--no-view"], cwd=folder, stdout=log, stderr=log, env=rig.env)
    rig.extra.append(proc)
    base = f"http://127.0.0.1:{port}"
    up = wait_for("the scenes session", lambda: proc.poll() is not None or (
        len(api_at(base, "scenes")["scenes"]) == 2
        and all(r.get("running") for r in api_at(base, "status").get("racks", []))), 60, every=0.2)
    if not up or proc.poll() is not None:
        raise SetupError(f"the scenes session did not start within 60 s; see {log.name}")
    probe = Probe("pt-scenes")
    probe.connect("stage:out_1", f"{probe.name}:cap")
    probe.connect(f"{probe.name}:midi", "stage:midi_in")

    d = rig.browser(*PHONE)
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True})
    open_page(d, base)
    buttons = wait_for("the scene buttons", lambda: len(d.find_elements("css selector", "#scenes button.scene")) == 2
                       and d.find_elements("css selector", "#scenes button.scene"), 10)
    names = [b.get_attribute("data-scene") for b in buttons or []]
    places = [d.execute_script(ON_SCREEN, b) for b in buttons or []]
    sizes = [(b.size["width"], b.size["height"]) for b in buttons or []]
    check("scenes buttons", names == ["loud", SOFT] and all(p["ok"] for p in places)
          and all(w >= 44 and h >= 44 for w, h in sizes),
          f"{names} on the Overview at {PHONE[0]}x{PHONE[1]}, "
          + ", ".join(f"{w}x{h} px at y {p['top']}..{p['bottom']} (between {p['from']} and {p['to']})"
                      for (w, h), p in zip(sizes, places)))

    def gain():
        return api_at(base, "engines/stage/plugins/amp/controls/gain")["value"]

    def button(name):
        return d.execute_script("return [...document.querySelectorAll('#scenes button.scene')]"
                                ".find((b) => b.dataset.scene === arguments[0])", name)

    def level():
        # 0.6 s from the next cycle; the first 0.1 s left out (the scene's 20 ms glide is over by then).
        return level_db(probe.capture(0.6)[int(0.1 * RATE):])

    def tap(name, value):
        t0 = time.monotonic()
        button(name).click()
        done = wait_for(f"'{name}' set and lit", lambda: gain() == value and d.execute_script(LIT) == name, 5, every=0.01)
        return bool(done), time.monotonic() - t0

    loud_ok, _ = tap("loud", 0)
    loud = level()
    soft_ok, took = tap(SOFT, -20)
    soft = level()
    change = soft - loud
    check("scenes tap", loud_ok and soft_ok and abs(change + 20) < 0.5,
          f"'loud' tapped: stage:out_1 at {loud:.2f} dB RMS; '{SOFT}' tapped: gain {gain()} dB on the server "
          f"{took * 1000:.0f} ms after the tap, its button lit, stage:out_1 at {soft:.2f} dB RMS, a change of "
          f"{change:+.2f} dB (the scenes differ by -20 dB)")

    # Recalled by other surfaces: OSC, then MIDI program change 1 (the preset's second scene) through the map.
    t0 = time.monotonic()
    rig.osc("/tandem/scene/recall", "loud", port=osc_port)
    by_osc = wait_for("the page to light 'loud'", lambda: d.execute_script(LIT) == "loud", 5, every=0.01)
    osc_after = time.monotonic() - t0
    t0 = time.monotonic()
    probe.send([0xC0, 1])
    by_midi = wait_for(f"the page to light '{SOFT}'", lambda: d.execute_script(LIT) == SOFT, 5, every=0.01)
    midi_after = time.monotonic() - t0
    midi_gain = gain()
    check("scenes elsewhere", bool(by_osc) and bool(by_midi) and midi_gain == -20,
          (f"OSC /tandem/scene/recall loud lit 'loud' on the page {osc_after * 1000:.0f} ms after the message"
           if by_osc else "an OSC recall never showed")
          + (f"; MIDI program change 1 lit '{SOFT}' {midi_after * 1000:.0f} ms after it (gain {midi_gain} dB)"
             if by_midi else f"; a MIDI program change never showed (gain {midi_gain} dB)"))

    # The morph: one made over OSC moves the page's slider and its scenes; the slider dragged on the page morphs.
    click(d, ".scene-more > summary")
    rig.osc("/tandem/scene/morph", "loud", SOFT, 0.25, port=osc_port)
    shown = wait_for("the page to show the morph", lambda: d.execute_script(
        "return document.getElementById('morph').value === '0.25' && document.getElementById('morph-from').value === "
        "'loud' && document.getElementById('morph-to').value === arguments[0] && !document.querySelector("
        "'#scenes [aria-pressed=\"true\"]')", SOFT), 5, every=0.01)
    from selenium.webdriver.common.action_chains import ActionChains
    slider = css(d, "#morph")
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", slider)
    ActionChains(d).move_to_element(slider).click_and_hold().move_by_offset(slider.size["width"] // 4, 0).release().perform()
    position = float(d.execute_script("return document.getElementById('morph').value"))
    morphed = wait_for("the server's gain to follow the slider", lambda: abs(gain() + 20 * position) < 0.01, 5, every=0.01)
    at = level()
    check("scenes morph", bool(shown) and bool(morphed) and 0.5 < position < 1 and abs(at - (loud - 20 * position)) < 0.5,
          ("a morph to 0.25 over OSC moved the page's slider there and lit no scene" if shown
           else "an OSC morph did not show on the page")
          + f"; the slider dragged to {position} set the gain to {gain():.2f} dB (expected {-20 * position:.2f}) and "
          f"stage:out_1 to {at:.2f} dB RMS ({at - loud:+.2f} dB from 'loud')")
    if rig.args.screenshots:
        out = os.path.join(ROOT, "docs", "screenshots")
        os.makedirs(out, exist_ok=True)
        api_at(base, f"scenes/{urllib.parse.quote(SOFT)}/recall", method="POST")
        wait_for("the page to light the scene", lambda: d.execute_script(LIT) == SOFT, 5)
        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(os.path.join(out, "scenes-390x844.png"))
        say("  screenshot docs/screenshots/scenes-390x844.png")

    # A scene saved and deleted by another client: the buttons follow (`scenes-changed`).
    api_at(base, "scenes", method="POST", body={"name": "captured"})
    added = wait_for("a third button", lambda: len(d.find_elements("css selector", "#scenes button.scene")) == 3, 5)
    api_at(base, "scenes/captured", method="DELETE")
    removed = wait_for("two buttons again", lambda: len(d.find_elements("css selector", "#scenes button.scene")) == 2, 5)
    check("scenes edited", bool(added) and bool(removed),
          "a scene saved over HTTP by another client appeared as a button, and went when deleted"
          if added and removed else f"the buttons did not follow (added: {bool(added)}, removed: {bool(removed)})")

    errors = [e["message"] for e in console_errors(d)]
    probe.close()
    d.quit()
    rig.drivers.remove(d)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    check("scenes console", not errors, f"{len(errors)} console error(s) on the scenes page"
          + (": " + " | ".join(errors[:3]) if errors else ""))


def server_check(rig, d):
    """The Server card shows the JACK server's DSP load and xruns as GET /api/status has them (the page reads the
    status every 2 s: its figures are compared with reads made just before and after reading the page)."""
    seen = {}

    def agree():
        before = rig.api("status")
        dsp_text, xruns_text = css(d, "#server-dsp").text, css(d, "#server-xruns").text
        after = rig.api("status")
        loads = [x.get("dspLoad") for x in (before, after)]
        xruns = [x.get("xruns") for x in (before, after)]
        seen.update(dsp=dsp_text, xruns=xruns_text, loads=loads, api_xruns=xruns)
        shown_load = float(re.match(r"(-?[0-9.]+) %$", dsp_text).group(1))
        shown_xruns = int(re.match(r"([0-9]+) ", xruns_text).group(1))
        # The load moves from read to read: the page's shows what one of the reads around it said, to its 0.1 %.
        off = min(abs(shown_load - x) for x in loads if x is not None)
        seen.update(off=off)
        return off <= max(1.0, 0.2 * max(x for x in loads if x is not None)) and shown_xruns in xruns
    ok = wait_for("the Server card to agree with the status", agree, 10, every=0.5)
    loads = " and ".join(f"{x:.2f}" for x in seen.get("loads", []) if x is not None) or "absent"
    check("server", bool(ok),
          f"the Server card shows DSP load {seen.get('dsp')!r} and xruns {seen.get('xruns')!r}; GET /api/status "
          f"just before and after: dspLoad {loads} %, xruns {' and '.join(str(x) for x in seen.get('api_xruns', []))}"
          + (f" (the page's load {seen['off']:.2f} points from the nearer)" if "off" in seen else ""))


def drag(d, slider, dx):
    """Drags a range input's thumb from the middle of its track by dx pixels, as a pointer would."""
    from selenium.webdriver.common.action_chains import ActionChains
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", slider)
    ActionChains(d).move_to_element(slider).click_and_hold().move_by_offset(dx, 0).release().perform()


def isolated_check(rig, d, probe):
    """The isolated rack's amp: its slider dragged on the page changes iso:out_1 by the value set (relayed to the
    rack's process), and a value set over OSC by another client comes back to the page."""
    route = "engines/iso/plugins/amp/controls/gain"
    control = '.control[data-key="iso/amp/gain"]'
    probe.disconnect("fx:out_1", f"{probe.name}:cap")
    probe.connect("iso:out_1", f"{probe.name}:cap")
    time.sleep(0.3)
    before = level_db(probe.capture(0.5))
    slider = wait_for("the isolated rack's gain slider", lambda: css(d, control + ' input[type="range"]'), 10)
    # From the middle (0 dB) an eighth of the way down: about -17.5 dB on the amp's -70..70 dB.
    drag(d, slider, -slider.size["width"] // 8)

    def settled():
        # The drag sends values as it goes: the last one is the one the server keeps.
        a = rig.api(route)["value"]
        time.sleep(0.3)
        b = rig.api(route)["value"]
        return (b,) if abs(b) > 1 and a == b else None
    set_value = (wait_for("the isolated rack's control to settle", settled, 10) or (None,))[0]
    time.sleep(0.3)
    after = level_db(probe.capture(0.5))
    shown = float(css(d, control).get_attribute("data-value"))
    change = after - before
    dragged = set_value is not None and abs(change - set_value) < 0.5 and abs(shown - set_value) < 1e-3

    # Another client sets it over OSC: the rack's process tells the session, whose event brings it to the page.
    t0 = time.monotonic()
    rig.osc("/tandem/plugin/set", "iso", "amp", "gain", -12.0)
    back = wait_for("the OSC value on the page",
                    lambda: near([float(css(d, control).get_attribute("data-value"))], -12), 5, every=0.01)
    latency = time.monotonic() - t0
    time.sleep(0.3)
    heard = level_db(probe.capture(0.5))
    probe.disconnect("iso:out_1", f"{probe.name}:cap")
    position = int(d.execute_script(f"return document.querySelector('{control} input[type=range]').value"))
    # -12 dB is 58/140 of the way along the amp's -70..70 dB.
    check("isolated", dragged and bool(back) and abs(heard - before + 12) < 0.5 and abs(position - 414) <= 1,
          f"iso amp gain dragged to {shown:.2f} dB (server: {set_value}); iso:out_1 went from {before:.2f} to "
          f"{after:.2f} dB RMS, a change of {change:+.2f} dB; -12 dB set over OSC shows on the page "
          + (f"{latency * 1000:.0f} ms later" if back else "never")
          + f" (slider at {position}/1000), iso:out_1 then {heard - before:+.2f} dB from where it started")


def near(values, target):
    """Whether every value is the target (dB kept as a 32-bit gain and read back differ in the 7th digit)."""
    return all(v is not None and abs(v - target) < 1e-3 for v in values)


def levels_check(rig, d):
    """The fx chain's dry/wet mix set over OSC and its gain over HTTP, by other clients: the Racks tab's sliders
    show both (by the `chain-level-changed` events). Both are set back to 1 and 0 dB afterwards."""
    chain = '.control.chain-level[data-engine="fx"][data-level="{}"]'

    def shown(what):
        el = css(d, chain.format(what))
        return (float(el.get_attribute("data-value")),
                float(el.find_element("css selector", "input").get_property("value")),
                el.find_element("css selector", "output").text)

    def showing(mix, gain):
        return near(shown("mix")[:2], mix) and near(shown("gain")[:2], gain)
    t0 = time.monotonic()
    rig.osc("/tandem/plugin/mix", "fx", 0.5)
    rig.api("engines/fx/gain", method="PUT", body={"gain": -3.0})
    both = wait_for("the chain's mix and gain on the page", lambda: showing(0.5, -3.0), 5, every=0.01)
    took = time.monotonic() - t0
    mix, gain = shown("mix"), shown("gain")
    status = rig.api("status")["plugins"].get("fx", {})
    rig.api("engines/fx/mix", method="PUT", body={"mix": 1.0})
    rig.api("engines/fx/gain", method="PUT", body={"gain": 0.0})
    restored = wait_for("the chain's mix and gain back on the page", lambda: showing(1.0, 0.0), 5)
    check("levels", bool(both) and near([status.get("mix")], 0.5) and near([status.get("gainDB")], -3) and bool(restored),
          f"fx mix 0.5 set over OSC and gain -3 dB over HTTP; the page's sliders show {mix[2]!r} (at {mix[1]}) and "
          f"{gain[2]!r} (at {gain[1]}) {took * 1000:.0f} ms later; GET /api/status: mix {status.get('mix')}, gain "
          f"{status.get('gainDB')} dB; set back to 1 and 0 dB" + (", shown" if restored else ", NOT shown"))


def player_check(rig, d):
    """The player's gain set over HTTP shows on the Overview's player card (by its status reads), and its queue is
    listed with the item playing. The gain is set back to 0 dB (unity: the take check compares bit for bit)."""
    tab(d, "overview")

    def gain():
        out = css(d, "#player-gain-value")
        return float(out.get_attribute("data-value")), float(css(d, "#player-gain").get_property("value")), out.text
    t0 = time.monotonic()
    rig.api("player/gain", method="PUT", body={"gain": -6.0})
    shown = wait_for("the player's gain on the page", lambda: near(gain()[:2], -6), 5, every=0.02)
    took = time.monotonic() - t0
    value = gain()
    player = rig.api("status")["player"]
    rows = d.execute_script("""return [...document.querySelectorAll('#queue li')].map((li) => ({
        text: li.textContent, current: li.classList.contains('current'), aria: li.getAttribute('aria-current')}))""")
    expected = [os.path.basename(q) for q in player.get("queue", [])]
    names = [r["text"].replace(" (playing)", "") for r in rows]
    marked = [i for i, r in enumerate(rows)
              if r["current"] and r["aria"] == "true" and r["text"].endswith(" (playing)")]
    rig.api("player/gain", method="PUT", body={"gain": 0.0})
    unity = wait_for("the player's gain back at 0 dB", lambda: near(gain()[:2], 0)
                     and rig.api("status")["player"]["gainDB"] == 0, 5)
    check("player", bool(shown) and near([player.get("gainDB")], -6) and names == expected and player["playing"]
          and marked == [player.get("item")] and bool(unity),
          f"player gain -6 dB set over HTTP; the page shows {value[2]!r} (slider at {value[1]}) "
          f"{took * 1000:.0f} ms later; "
          f"the queue lists {names} (the status: {expected}, item {player.get('item')} "
          f"{'playing' if player['playing'] else 'not playing'}), marked as playing: {marked}; set back to 0 dB"
          + (", shown" if unity else ", NOT shown"))


def clock(seconds):
    """Seconds as the page writes a marker's time (M:SS.t, H:MM:SS.t past an hour)."""
    whole = int(seconds)
    hours, minutes, secs = whole // 3600, whole % 3600 // 60, whole % 60
    return (f"{hours}:{minutes:02d}" if hours else f"{minutes}") + f":{secs:02d}.{int((seconds - whole) * 10)}"


def marker_check(rig, d):
    """A take started and a marker added over HTTP: the recorder's badge says recording, and the markers list shows
    the marker with the label and time of the `marker-added` event (read by a WebSocket client of this script's
    own). The take is stopped and its report waited for, so the take check's take is the next one."""
    import websocket     # websocket-client, which selenium needs and brings
    tab(d, "overview")
    events = websocket.create_connection(f"ws://127.0.0.1:{rig.port}/api/events", timeout=10)
    event, label = None, "page-test cue"
    try:
        events.recv()    # hello
        rig.api("recorder/start", method="POST")
        badge = wait_for("the recording badge", lambda: css(d, "#rec-state").get_attribute("data-state") == "recording"
                         and css(d, "#rec-state").text, 10)
        time.sleep(1.2)
        reply = rig.api("recorder/mark", method="POST", body={"label": label})
        end = time.monotonic() + 10
        while event is None and time.monotonic() < end:
            try:
                msg = json.loads(events.recv())
            except websocket.WebSocketTimeoutException:
                break
            if msg.get("type") == "event" and msg.get("kind") == "marker-added" and msg.get("label") == label:
                event = msg
    finally:
        events.close()
    # Read in one go: the list is drawn again when the status or an event changes it.
    item = wait_for("the marker in the list", lambda: d.execute_script("""
        const list = document.getElementById('marks');
        const li = [...list.querySelectorAll('li')].find((x) => x.dataset.label === arguments[0]);
        return li && {seconds: li.dataset.seconds, text: li.textContent.replace(/\\s+/g, ' '), take: list.dataset.take};
    """, label), 5) or {}
    text, take = item.get("text", ""), item.get("take")
    listed = bool(event) and bool(item) and float(item["seconds"]) == event["seconds"] \
        and text.startswith(clock(event["seconds"]) + " " + label) and take == str(event["take"])
    rig.api("recorder/stop", method="POST")
    stopped = wait_for("the marker take to end", lambda: not rig.api("status")["recorder"]["recording"], 10)
    report = wait_for("the marker take's report", lambda: [t for t in rig.api("takes") if event
                                                           and t["take"] == event["take"]], 10)
    badge_after = wait_for("the badge to leave recording", lambda: css(d, "#rec-state").get_attribute("data-state")
                           != "recording" and css(d, "#rec-state").text, 5)
    check("marker", bool(badge) and listed and bool(stopped) and bool(report) and bool(badge_after),
          f"take started over HTTP: the badge says {badge!r}; marker {label!r} added ({reply.get('detail')}); the "
          + (f"event says take {event['take']} at {event['seconds']:.3f} s; " if event else "event never came; ")
          + f"the page's list (take {take}) shows {text!r}; the take stopped (badge {badge_after!r}), its report "
          + ("listed" if report else "NOT listed"))


def bit_exact(take, signal):
    """Whether the take is the looped signal sample for sample, from some offset: (bool, words)."""
    if len(take) == 0:
        return False, "the take is empty"
    n = len(signal)
    starts = [i for i in range(n) if signal[i] == take[0]]
    for s in starts:
        looped = signal[s:] + signal * ((len(take) - (n - s)) // n + 1)
        if looped[:len(take)] == take:
            return True, f"every sample equals the test signal's (from its frame {s}, looped)"
    # Where it first differs, from the best start.
    best, where = None, -1
    for s in starts[:10]:
        looped = signal[s:] + signal * ((len(take) - (n - s)) // n + 1)
        k = next((i for i in range(len(take)) if take[i] != looped[i]), len(take))
        if k > where:
            best, where = s, k
    if best is None:
        return False, "its first sample is not in the test signal"
    silent = all(x == 0 for x in take[where:where + PERIOD])
    return False, (f"differs from the test signal at frame {where} (from its frame {best})"
                   + (", where a period of silence is in the take" if silent else ""))


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
