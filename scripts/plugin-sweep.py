#!/usr/bin/env python3
"""The plugin catalogue as a test: every installed LV2, LADSPA and DSSI plugin through a Tandem rack (`make plugin-sweep`).

For each plugin a private dummy JACK server is started (48 kHz, period 256), `tandem rack --plugin URI` is run on it
with its default control values, and a probe client (this script run as `--probe`, libjack through ctypes) feeds
white noise into every audio and CV input port the rack has (read with `jack_lsp`, never assumed), a note every
quarter second into every MIDI input, and reads every audio output for --seconds (default 2). Then SIGTERM. Each
plugin gets one outcome:

  ran          the rack started, ran for the whole time with finite output, and exited 0 on SIGTERM
  refused      `tandem rack` exited 2 before starting, with a message (the message is kept; one without a message
               is counted as tandem-hurt)
  crashed      the rack process died by a signal (at start, while running, or on the way out), and so does jalv
               running the same plugin the same way: the plugin's crash
  hung         the rack never got ready, stopped the graph, or ignored SIGTERM, and so does jalv: the plugin's hang
  nan          NaN or infinity came out of the rack. `whose` says plugin when jalv's output has them too, tandem
               when jalv's is finite and a second run of the rack gives them again (a failure of Tandem's)
  tandem-hurt  Tandem itself failed where the plugin is fine: it crashed, hung or gave NaN while jalv ran the plugin
               cleanly, and did so again on a second run (once only, and jalv clean: `ran`, whose `flaky`); it
               trapped (`Fatal error` on stderr), refused without a message, exited with a code other than 0 on
               SIGTERM or 2 at start (docs/CLI.md), refused as malformed a name its own catalogue lists, or, run
               as an isolated rack (`[[rack]] isolate = true`), its session did not outlive the plugin
  untested     the sweep's own JACK side failed three times (the server died, Tandem exit 3, the probe could not
               join): nothing is known about the plugin
For a plugin that crashed or hung, the same plugin is also run in an isolated rack under `tandem run`: the session
must stay up, restart the rack's process, and exit 0 on SIGTERM (the table notes how many times it went down).
jalv (`jalv -x`, its console reading a pipe that stays open) runs the plugin only where Tandem failed, or where a
clean run's output was silent or far over full scale (the report lists those whose output differs from jalv's: a
control default read wrongly silences an oscillator), so a plain plugin costs one rack. The kernel log (`dmesg`,
where it can be read) names the library a segfault happened in.

LADSPA and DSSI plugins (`--format`; the catalogue is `tandem plugins --format ... --json`, named `ladspa:LIB/LABEL`
and `dssi:LIB/LABEL`) are swept the same way, with other reference hosts in jalv's place:
  LADSPA       `applyplugin` (Debian ladspa-sdk) over a 16-bit WAV of the same noise (--seconds long, a channel per
               audio input), every input control at the value Tandem starts it with (the catalogue's default), in
               port order. It processes in place (one buffer for an input and an output), so it refuses plugins
               marked in-place broken; it needs at least one audio input and one audio output; it writes 16-bit
               PCM and prints its peak before clipping (which NaN does not raise): it tells a crash, a hang or a
               silent output apart from a clean run, not NaN from finite output. Where it cannot take the plugin,
               the offline host runs it.
  DSSI         the offline host (`--offline`, this script through ctypes): one instance, run_synth over blocks of 256
               frames with the probe's notes as ALSA sequencer events, every input control at Tandem's starting
               value, every audio output checked for NaN. Debian's own jack-dssi-host (dssi-host-jack) takes its
               MIDI from the ALSA sequencer only and exits where there is none (no /dev/snd/seq on a VM or in a
               container), and Debian 12 ships no other DSSI host that runs without a display.
Where the reference host could not judge the plugin (it could not take it, or failed to load it too), or it ran it
cleanly, the rack is run once more before Tandem is blamed, as for LV2.
A sweep of more than one kind of format reports LV2 on its own and LADSPA and DSSI together (--doc: two marker pairs).

The Swift runtime's crash backtracer is turned off in the rack (SWIFT_BACKTRACE=enable=no, as Tandem does for its own
isolated racks and its tests): left on, a debug build spends about 30 s symbolicating before a crashed plugin's
process ends, which reads as a hang. --backtrace leaves it on (slower, and its backtrace names the crashing frame).

Packages (Debian 12; `--install` apt-installs those of the formats swept that are missing, as root): see PACKAGES.

    scripts/plugin-sweep.py --install                 # install the plugin packages (idempotent)
    scripts/plugin-sweep.py                           # every installed plugin; table on stdout
    scripts/plugin-sweep.py --list scripts/plugin-sweep-ci.txt --out sweep.md --json sweep.json
    scripts/plugin-sweep.py --filter 'x42|zam' --limit 10 --jobs 2
    scripts/plugin-sweep.py --format ladspa,dssi --filter '^ladspa:cmt/' --jobs 2
    scripts/plugin-sweep.py --doc docs/RELIABILITY.md # splice the summary between the plugin-sweep markers

Exit status: 0 when Tandem was never hurt (no tandem-hurt outcome, no NaN of Tandem's making) and every plugin was
judged (no untested), 1 otherwise, 3 when a tool it needs (jackd, jack_lsp, setpriv, the tandem binary; jalv to sweep
LV2, applyplugin to sweep LADSPA) is missing.
"""
import argparse, concurrent.futures, ctypes, datetime, json, math, os, queue, random, re, shutil, signal, socket
import statistics, subprocess, sys, tempfile, threading, time, urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
RATE, PERIOD = 48000, 256

# Every Debian 12 package that installs LV2 plugins into /usr/lib/lv2 (681 plugins from these 31 packages; x42-plugins,
# swh-lv2, mda-lv2 and lv2-examples are also in `make deps`). Not here: amsynth and tuxguitar-synth-lv2 (no LV2 bundle
# in Debian 12's packages), carla (not in Debian 12).
# LADSPA: every Debian 12 package with a library in /usr/lib/ladspa (or its multiarch twin), 522 plugins; zam-plugins
# (also LV2) brings its LADSPA builds. Not here: the LADSPA packages of other projects' hosts (pd-plugin, ladspalist)
# and ladspa builds Debian 12 does not have (calf). csladspa lists no plugin until a Csound file is put beside it.
# DSSI: every Debian 12 package with a library in /usr/lib/dssi, 21 plugins: the synths, dpf's effects and the SDK's
# examples. dssi-host-jack is the SDK's own host (not usable headless here: see above); dssi-utils its tools.
PACKAGES = {
    "lv2": [
        "abgate", "ardour-lv2-plugins", "avldrums.lv2", "blop-lv2", "calf-plugins", "dpf-plugins-lv2",
        "dragonfly-reverb-lv2", "drumgizmo", "drumkv1-lv2", "eq10q", "fomp", "foo-yc20", "guitarix-lv2",
        "invada-studio-plugins-lv2", "ir.lv2", "lsp-plugins-lv2", "lv2-examples", "lv2vocoder", "mda-lv2",
        "padthv1-lv2", "rubberband-lv2", "samplv1-lv2", "setbfree", "so-synth-lv2", "swh-lv2", "synthv1-lv2",
        "vocproc", "x42-plugins", "yoshimi", "zam-plugins", "zynaddsubfx-lv2",
    ],
    "ladspa": [
        "ladspa-sdk", "amb-plugins", "autotalent", "blepvco", "blop", "bs2b-ladspa", "caps", "cmt", "csladspa",
        "dpf-plugins-ladspa", "fil-plugins", "guitarix-ladspa", "invada-studio-plugins-ladspa", "lsp-plugins-ladspa",
        "mcp-plugins", "omins", "rev-plugins", "rubberband-ladspa", "ste-plugins", "swh-plugins", "tap-plugins",
        "vco-plugins", "vlevel", "wah-plugins", "zam-plugins",
    ],
    "dssi": [
        "amsynth", "dpf-plugins-dssi", "dssi-example-plugins", "fluidsynth-dssi", "hexter", "whysynth", "wsynth-dssi",
        "xsynth-dssi", "zynaddsubfx-dssi",
    ],
}
FORMATS = ["lv2", "ladspa", "dssi"]
# What the sweep itself runs, and what each format's reference host needs.
TOOLS = ["jackd", "jack_lsp", "setpriv"]
REFERENCE = {"lv2": "jalv", "ladspa": "applyplugin", "dssi": "the offline host"}
OUTCOMES = ["ran", "refused", "crashed", "hung", "nan", "tandem-hurt", "untested"]
BEGIN, END = "<!-- plugin-sweep:begin -->", "<!-- plugin-sweep:end -->"
# The LADSPA and DSSI summary's markers (the LV2 one keeps the plain pair).
LD_BEGIN, LD_END = "<!-- plugin-sweep-ladspa-dssi:begin -->", "<!-- plugin-sweep-ladspa-dssi:end -->"
RACK = "sweep"          # the rack's name and JACK client
REF = "sweepref"        # jalv's JACK client
READY = re.compile(r"rack %s ready" % RACK)
TRAP = re.compile(r"^(Fatal error|.*Program crashed|Current stack trace)", re.M)


def log(msg):
    print("# " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------------------
# The probe: a JACK process of its own (`plugin-sweep.py --probe SPEC`), two clients: sweep-gen writes noise and notes
# into the host's inputs, sweep-sink reads the host's outputs (two clients, so the graph has no cycle).
# ---------------------------------------------------------------------------------------------------------------------

AUDIO_TYPE, MIDI_TYPE = b"32 bit float mono audio", b"8 bit raw midi"
IS_INPUT, IS_OUTPUT = 0x1, 0x2
NOISE_FRAMES = 1 << 16
NOTE_EVERY, NOTE_LENGTH = RATE // 4, RATE // 5          # a note each quarter second, held 0.2 s
NOTES = [48, 60, 64, 67, 72, 55, 62, 69]


def libjack():
    c = ctypes
    j = c.CDLL("libjack.so.0")
    sig = {
        "jack_client_open": (c.c_void_p, [c.c_char_p, c.c_int, c.POINTER(c.c_int)]),
        "jack_port_register": (c.c_void_p, [c.c_void_p, c.c_char_p, c.c_char_p, c.c_ulong, c.c_ulong]),
        "jack_port_get_buffer": (c.c_void_p, [c.c_void_p, c.c_uint32]),
        "jack_set_process_callback": (c.c_int, [c.c_void_p, c.c_void_p, c.c_void_p]),
        "jack_activate": (c.c_int, [c.c_void_p]),
        "jack_deactivate": (c.c_int, [c.c_void_p]),
        "jack_client_close": (c.c_int, [c.c_void_p]),
        "jack_connect": (c.c_int, [c.c_void_p, c.c_char_p, c.c_char_p]),
        "jack_get_sample_rate": (c.c_uint32, [c.c_void_p]),
        "jack_midi_clear_buffer": (None, [c.c_void_p]),
        "jack_midi_event_write": (c.c_int, [c.c_void_p, c.c_uint32, c.c_char_p, c.c_size_t]),
        "jack_midi_get_event_count": (c.c_uint32, [c.c_void_p]),
    }
    for name, (res, args) in sig.items():
        f = getattr(j, name)
        f.restype, f.argtypes = res, args
    return j


PROCESS = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


class PortStats:
    def __init__(self, name):
        self.name, self.frames, self.nonfinite, self.first_nonfinite, self.peak = name, 0, 0, None, 0.0

    def take(self, samples, at):
        total = sum(samples)
        if math.isfinite(total):          # no NaN and no infinity in the block (either makes the sum non-finite)
            self.peak = max(self.peak, max(samples), -min(samples))
        else:
            finite = [x for x in samples if math.isfinite(x)]
            bad = len(samples) - len(finite)
            if bad:
                if self.first_nonfinite is None:
                    self.first_nonfinite = at + next(i for i, x in enumerate(samples) if not math.isfinite(x))
                self.nonfinite += bad
            if finite:
                self.peak = max(self.peak, max(finite), -min(finite))
        self.frames += len(samples)

    def json(self):
        return {"port": self.name, "frames": self.frames, "nonfinite": self.nonfinite,
                "firstNonfinite": self.first_nonfinite, "peak": self.peak}


class Probe:
    def __init__(self, spec):
        self.j = libjack()
        self.seconds = spec["seconds"]
        self.feed, self.midi, self.watch = spec["feed"], spec["midi"], spec["watch"]
        self.midi_watch = spec.get("midiWatch", [])
        self.midi_events = 0
        rng = random.Random(1)
        noise = [rng.uniform(-0.5, 0.5) for _ in range(NOISE_FRAMES + 8192)]
        self.noise = (ctypes.c_float * len(noise))(*noise)
        self.noise_addr = ctypes.addressof(self.noise)
        self.gen_pos = self.sink_pos = 0
        self.connected = False
        self.errors = []
        self.done = threading.Event()
        self.stats = [PortStats(p) for p in self.watch]
        self.gen = self.open(b"sweep-gen")
        self.sink = self.open(b"sweep-sink")
        self.noise_ports = [self.register(self.gen, "noise_%d" % (i + 1), AUDIO_TYPE, IS_OUTPUT)
                            for i in range(len(self.feed))]
        self.note_port = self.register(self.gen, "notes", MIDI_TYPE, IS_OUTPUT) if self.midi else None
        self.watch_ports = [self.register(self.sink, "in_%d" % (i + 1), AUDIO_TYPE, IS_INPUT)
                            for i in range(len(self.watch))]
        self.midi_watch_ports = [self.register(self.sink, "midi_in_%d" % (i + 1), MIDI_TYPE, IS_INPUT)
                                 for i in range(len(self.midi_watch))]
        self.rate = self.j.jack_get_sample_rate(self.gen)
        # The callbacks must outlive the clients: kept as attributes.
        self.gen_cb, self.sink_cb = PROCESS(self.gen_cycle), PROCESS(self.sink_cycle)
        self.j.jack_set_process_callback(self.gen, ctypes.cast(self.gen_cb, ctypes.c_void_p), None)
        self.j.jack_set_process_callback(self.sink, ctypes.cast(self.sink_cb, ctypes.c_void_p), None)

    def open(self, name):
        status = ctypes.c_int(0)
        client = self.j.jack_client_open(name, 0x01, ctypes.byref(status))    # JackNoStartServer
        if not client:
            raise SystemExit("probe: cannot open JACK client %s (status 0x%x)" % (name.decode(), status.value))
        return client

    def register(self, client, name, kind, flags):
        port = self.j.jack_port_register(client, name.encode(), kind, flags, 0)
        if not port:
            raise SystemExit("probe: cannot register port %s" % name)
        return port

    def close(self):
        """Deactivate and close both clients: a client that just vanishes leaves jackd unable to close the host's
        client afterwards (the host then seems to ignore SIGTERM). Bounded: a host that hangs the graph can hold
        jack_deactivate, and then the process exits without it (probe_main)."""
        def run():
            for c in (self.gen, self.sink):
                self.j.jack_deactivate(c)
                self.j.jack_client_close(c)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(3)

    def notes(self, pos, n):
        """(offset, bytes) of the note-ons and note-offs that fall in the frames pos..pos+n."""
        out = []
        for k in range(pos // NOTE_EVERY, (pos + n) // NOTE_EVERY + 1):
            key = NOTES[k % len(NOTES)]
            on, off = k * NOTE_EVERY, k * NOTE_EVERY + NOTE_LENGTH
            if pos <= on < pos + n:
                out.append((on - pos, bytes([0x90, key, 100])))
            if pos <= off < pos + n:
                out.append((off - pos, bytes([0x80, key, 0])))
        return sorted(out)

    def gen_cycle(self, n, _):
        try:
            for i, port in enumerate(self.noise_ports):
                buf = self.j.jack_port_get_buffer(port, n)
                offset = (self.gen_pos + i * 7919) % NOISE_FRAMES      # each port its own stretch of the noise
                ctypes.memmove(buf, self.noise_addr + 4 * offset, 4 * n)
            if self.note_port:
                buf = self.j.jack_port_get_buffer(self.note_port, n)
                self.j.jack_midi_clear_buffer(buf)
                if self.connected:
                    for t, data in self.notes(self.gen_pos, n):
                        self.j.jack_midi_event_write(buf, t, data, len(data))
            if self.connected:
                self.gen_pos += n
        except Exception as e:  # noqa: BLE001  (an exception must not escape into libjack)
            self.errors.append("gen: %r" % e)
        return 0

    def sink_cycle(self, n, _):
        try:
            if self.connected and not self.done.is_set():
                for st, port in zip(self.stats, self.watch_ports):
                    buf = self.j.jack_port_get_buffer(port, n)
                    st.take(memoryview(ctypes.string_at(buf, 4 * n)).cast("f"), self.sink_pos)
                for port in self.midi_watch_ports:
                    self.midi_events += self.j.jack_midi_get_event_count(self.j.jack_port_get_buffer(port, n))
                self.sink_pos += n
                if self.sink_pos >= self.seconds * self.rate:
                    self.done.set()
        except Exception as e:  # noqa: BLE001
            self.errors.append("sink: %r" % e)
        return 0

    def run(self):
        for c in (self.gen, self.sink):
            if self.j.jack_activate(c):
                raise SystemExit("probe: cannot activate")
        pairs = [("sweep-gen:noise_%d" % (i + 1), p) for i, p in enumerate(self.feed)]
        pairs += [("sweep-gen:notes", p) for p in self.midi]
        pairs += [(p, "sweep-sink:in_%d" % (i + 1)) for i, p in enumerate(self.watch)]
        pairs += [(p, "sweep-sink:midi_in_%d" % (i + 1)) for i, p in enumerate(self.midi_watch)]
        for a, b in pairs:
            if self.j.jack_connect(self.gen, a.encode(), b.encode()):
                self.errors.append("cannot connect %s to %s" % (a, b))
        t0 = time.monotonic()
        self.connected = True
        # Audio time, with a wall-clock bound: a graph stopped by a host that hangs never reaches it.
        self.done.wait(self.seconds * 2 + 3)
        wall = time.monotonic() - t0
        self.close()
        return {"seconds": self.seconds, "wall": round(wall, 3), "frames": self.sink_pos, "genFrames": self.gen_pos,
                "complete": self.sink_pos >= self.seconds * self.rate, "errors": self.errors,
                "fed": self.feed, "notesTo": self.midi, "ports": [s.json() for s in self.stats],
                "midiOut": self.midi_events if self.midi_watch else None}


def probe_main(spec_json):
    print(json.dumps(Probe(json.loads(spec_json)).run()), flush=True)
    os._exit(0)


# ---------------------------------------------------------------------------------------------------------------------
# The offline host: a DSSI (or LADSPA) plugin run as a plain host runs it (one instance, instantiate, connect, activate,
# run or run_synth over blocks of PERIOD frames, deactivate, cleanup), in a process of its own (`plugin-sweep.py
# --offline SPEC`), through ctypes. The reference for DSSI, which has no host in Debian 12 that runs headless, and
# for the LADSPA plugins applyplugin does not take. The same noise into every audio input, the same notes as the probe's
# (as ALSA sequencer events, their offsets in time.tick, as DSSI says), every audio output checked for NaN and peak.
# ---------------------------------------------------------------------------------------------------------------------

PORT_INPUT, PORT_OUTPUT, PORT_CONTROL, PORT_AUDIO = 0x1, 0x2, 0x4, 0x8
SEQ_NOTEON, SEQ_NOTEOFF = 6, 7


class SeqEvent(ctypes.Structure):
    """snd_seq_event_t (28 bytes) as far as a note needs it."""
    _fields_ = [("type", ctypes.c_ubyte), ("flags", ctypes.c_ubyte), ("tag", ctypes.c_ubyte), ("queue", ctypes.c_ubyte),
                ("tick", ctypes.c_uint), ("nsec", ctypes.c_uint), ("source", ctypes.c_ubyte * 2),
                ("dest", ctypes.c_ubyte * 2), ("channel", ctypes.c_ubyte), ("note", ctypes.c_ubyte),
                ("velocity", ctypes.c_ubyte), ("off_velocity", ctypes.c_ubyte), ("duration", ctypes.c_uint),
                ("pad", ctypes.c_uint)]


def offline_main(spec_json):
    c = ctypes
    spec = json.loads(spec_json)
    lib = c.CDLL(spec["library"])
    dssi = spec["format"] == "dssi"
    entry = getattr(lib, "dssi_descriptor" if dssi else "ladspa_descriptor")
    entry.restype, entry.argtypes = c.c_void_p, [c.c_ulong]
    desc = run_synth = None
    for i in range(10000):
        d = entry(i)
        if not d:
            break
        ld = c.cast(d + 8, c.POINTER(c.c_void_p))[0] if dssi else d
        if c.cast(ld, c.POINTER(c.c_char_p))[1].decode() == spec["label"]:
            desc = ld
            if dssi:
                synth = c.cast(d, c.POINTER(c.c_void_p))[6]
                if synth:
                    run_synth = c.CFUNCTYPE(None, c.c_void_p, c.c_ulong, c.POINTER(SeqEvent), c.c_ulong)(synth)
            break
    if desc is None:
        raise SystemExit("offline: no plugin labelled %s in %s" % (spec["label"], spec["library"]))
    f = c.cast(desc, c.POINTER(c.c_void_p))     # UniqueID, Label, Properties, Name, Maker, Copyright, PortCount, ...
    count = f[6]
    kinds = c.cast(f[7], c.POINTER(c.c_int))
    instantiate = c.CFUNCTYPE(c.c_void_p, c.c_void_p, c.c_ulong)(f[11])
    connect = c.CFUNCTYPE(None, c.c_void_p, c.c_ulong, c.c_void_p)(f[12])
    activate = c.CFUNCTYPE(None, c.c_void_p)(f[13]) if f[13] else None
    run = c.CFUNCTYPE(None, c.c_void_p, c.c_ulong)(f[14]) if f[14] else None
    deactivate = c.CFUNCTYPE(None, c.c_void_p)(f[17]) if f[17] else None
    cleanup = c.CFUNCTYPE(None, c.c_void_p)(f[18]) if f[18] else None
    h = instantiate(desc, RATE)
    if not h:
        raise SystemExit("offline: instantiate returned NULL")
    rng = random.Random(1)
    noise = (c.c_float * (NOISE_FRAMES + PERIOD))(*[rng.uniform(-0.5, 0.5) for _ in range(NOISE_FRAMES + PERIOD)])
    controls = list(spec["controls"])
    keep, ins, outs = [], [], []
    for i in range(count):
        k = kinds[i]
        if k & PORT_CONTROL:
            v = c.c_float(controls.pop(0) if k & PORT_INPUT and controls else 0.0)
            keep.append(v)
            connect(h, i, c.addressof(v))
        else:
            buf = (c.c_float * PERIOD)()
            keep.append(buf)
            connect(h, i, c.addressof(buf))
            (ins if k & PORT_INPUT else outs).append((i, buf))
    if activate:
        activate(h)
    stats = [PortStats("port %d" % i) for i, _ in outs]
    probe = Probe.__new__(Probe)                 # its note schedule only
    pos, frames = 0, int(spec["seconds"] * RATE)
    while pos < frames:
        for n, (_, buf) in enumerate(ins):
            c.memmove(buf, c.addressof(noise) + 4 * ((pos + n * 7919) % NOISE_FRAMES), 4 * PERIOD)
        if run_synth:
            notes = probe.notes(pos, PERIOD)
            events = (SeqEvent * max(1, len(notes)))()
            for e, (t, data) in zip(events, notes):
                e.type = SEQ_NOTEON if data[0] == 0x90 else SEQ_NOTEOFF
                e.tick, e.note, e.velocity = t, data[1], data[2]
            run_synth(h, PERIOD, events, len(notes))
        elif run:
            run(h, PERIOD)
        for st, (_, buf) in zip(stats, outs):
            st.take(memoryview(c.string_at(c.addressof(buf), 4 * PERIOD)).cast("f"), pos)
        pos += PERIOD
    if deactivate:
        deactivate(h)
    if cleanup:
        cleanup(h)
    print(json.dumps({"frames": pos, "ports": [s.json() for s in stats]}), flush=True)
    os._exit(0)


# ---------------------------------------------------------------------------------------------------------------------
# Processes: everything is started under `setpriv --pdeathsig` so that nothing outlives the sweep, and tracked so
# that an interrupted sweep stops what it started.
# ---------------------------------------------------------------------------------------------------------------------

LIVE = set()
LIVE_LOCK = threading.Lock()


def spawn(argv, env, out_path, death="KILL", stdin=subprocess.DEVNULL, err_path=None):
    out = open(out_path, "w")
    err = open(err_path, "w") if err_path else subprocess.STDOUT
    p = subprocess.Popen(["setpriv", "--pdeathsig", death, "--"] + argv, env=env, stdin=stdin, stdout=out,
                         stderr=err, start_new_session=True)
    out.close()
    if err_path:
        err.close()
    with LIVE_LOCK:
        LIVE.add(p)
    return p


def reap(p):
    with LIVE_LOCK:
        LIVE.discard(p)


def stop(p, timeout):
    """SIGTERM, then SIGKILL after `timeout` s. Returns (exit code as Popen gives it, honoured SIGTERM in time)."""
    if p.poll() is not None:
        reap(p)
        return p.returncode, True
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout)
        honoured = True
    except subprocess.TimeoutExpired:
        honoured = False
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(10)
    reap(p)
    return p.returncode, honoured


def stop_everything():
    with LIVE_LOCK:
        procs = list(LIVE)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def describe_exit(code):
    if code is None:
        return "still running"
    if code < 0:
        try:
            return "killed by signal %d (%s)" % (-code, signal.Signals(-code).name)
        except ValueError:
            return "killed by signal %d" % -code
    return "exit %d" % code


def read(path, limit=200000):
    try:
        with open(path, errors="replace") as f:
            return f.read(limit)
    except OSError:
        return ""


class Server:
    """A private dummy JACK server named `name`, its log in `workdir` (`LABEL.jackd.log`)."""
    def __init__(self, name, workdir, label="jackd"):
        self.name = name
        self.env = dict(os.environ, JACK_DEFAULT_SERVER=name, JACK_NO_START_SERVER="1", JACK_NO_AUDIO_RESERVATION="1")
        self.proc = None
        for attempt in range(3):
            self.proc = spawn(["jackd", "-n", name, "-r", "-p", "1024", "-d", "dummy", "-r", str(RATE),
                               "-p", str(PERIOD)], self.env, os.path.join(workdir, label + ".jackd.log"),
                              death="TERM")
            if wait_until(lambda: self.proc.poll() is not None or self.lsp_ok(), 10) and self.proc.poll() is None:
                return
            stop(self.proc, 5)
            time.sleep(0.5 * (attempt + 1))
        raise RuntimeError("jackd %s did not start: %s" % (
            name, read(os.path.join(workdir, label + ".jackd.log"))[-500:]))

    def lsp_ok(self):
        return subprocess.run(["jack_lsp"], env=self.env, capture_output=True).returncode == 0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        stop(self.proc, 10)


def wait_until(predicate, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


def jack_ports(env, client):
    """The ports of `client`: [{"name", "input", "midi"}], from `jack_lsp -p -t`."""
    r = subprocess.run(["jack_lsp", "-p", "-t"], env=env, capture_output=True, text=True, timeout=10)
    ports, cur = [], None
    for line in r.stdout.splitlines():
        if not line.startswith(("\t", " ")):
            cur = {"name": line.strip(), "input": False, "midi": False} if line.startswith(client + ":") else None
            if cur:
                ports.append(cur)
        elif cur is not None:
            s = line.strip()
            if s.startswith("properties:"):
                cur["input"] = "input" in [f.strip() for f in s.split(":", 1)[1].split(",")]
            elif "midi" in s:
                cur["midi"] = True
            elif "audio" not in s:
                cur["other"] = s
    return ports


def threads(pid):
    try:
        return {int(t) for t in os.listdir("/proc/%d/task" % pid)}
    except OSError:
        return set()


def segfault_library(tids):
    """The library the kernel log names for a segfault of one of the threads `tids` (`NAME[TID]: segfault at ... in
    libfoo.so[...]`: the kernel names the thread, not the process), if the log can be read."""
    try:
        text = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = None
    for line in text.splitlines():
        m = re.search(r"\[(\d+)\]: (?:segfault|trap|general protection).*? in ([^\s\[]+)", line)
        if m and int(m.group(1)) in tids:
            found = m.group(2)
    return found


# ---------------------------------------------------------------------------------------------------------------------
# One host running one plugin: Tandem's rack or jalv, fed and read by the probe.
# ---------------------------------------------------------------------------------------------------------------------

class HostRun:
    """What happened to one host: how it started, what the probe saw, how it ended."""
    def __init__(self, host):
        self.host = host
        self.start = None        # "ready" | "exited" | "timeout"
        self.start_s = None
        self.stop_s = None
        self.code = None         # Popen return code: -N for signal N
        self.stop = None         # "sigterm" | "died" | "ignored-sigterm"
        self.probe = None
        self.ports = []
        self.stderr = ""
        self.segfault_in = None
        self.tids = set()

    # One verdict per host: ran, refused, failed (exited before it was ready, not 2), crashed, hung, nan, error (an
    # exit code Tandem should not give), harness (the sweep's JACK side failed).
    def verdict(self):
        if self.host == "tandem" and self.code == 3:
            return "harness", "exit 3 (the JACK server failed)" + tail_note(self)
        if self.probe and self.probe.get("harness"):
            return "harness", "; ".join(self.probe["errors"])
        if self.start == "timeout":
            return "hung", "not ready after the start timeout"
        if self.start == "exited":
            if self.code is not None and self.code < 0:
                return "crashed", "%s while starting" % describe_exit(self.code)
            if self.code == 2 and self.host == "tandem":
                return "refused", refusal(self.stderr)
            return "failed", "%s before it was ready" % describe_exit(self.code)
        if self.stop == "died":
            if self.code < 0:
                return "crashed", "%s while running" % describe_exit(self.code)
            return "error", "%s while running" % describe_exit(self.code)
        if self.stop == "ignored-sigterm":
            return "hung", "SIGTERM not honoured (killed)"
        if self.code is not None and self.code < 0 and not (self.host == "jalv" and self.code == -signal.SIGTERM):
            return "crashed", "%s on SIGTERM" % describe_exit(self.code)
        if self.probe and not self.probe.get("complete"):
            return "hung", "the graph stopped: %d of %d frames in %.1f s" % (
                self.probe.get("frames", 0), self.probe.get("seconds", 0) * RATE, self.probe.get("wall", 0))
        bad = [p for p in (self.probe or {}).get("ports", []) if p["nonfinite"]]
        if bad:
            return "nan", "; ".join("%s: %d non-finite samples from frame %d" % (
                p["port"].split(":", 1)[1], p["nonfinite"], p["firstNonfinite"]) for p in bad)
        if self.code not in (0, None) and self.host == "tandem":
            return "error", "%s on SIGTERM" % describe_exit(self.code)
        return "ran", ""

    def crash_note(self):
        return " (segfault in %s)" % self.segfault_in if self.segfault_in else ""

    def json(self):
        v, why = self.verdict()
        return {"host": self.host, "verdict": v, "why": why, "start": self.start, "startSeconds": self.start_s,
                "stopSeconds": self.stop_s, "exit": describe_exit(self.code), "stop": self.stop, "ports": self.ports,
                "probe": self.probe, "segfaultIn": self.segfault_in, "stderrTail": self.stderr[-2000:]}


def refusal(stderr):
    """Tandem's own message lines (`tandem: ...`, not notes), joined: why it refused."""
    lines = [l[len("tandem: "):] for l in stderr.splitlines()
             if l.startswith("tandem: ") and not l.startswith("tandem: note:")]
    return " / ".join(lines)


def run_host(host, uri, server, work, args, label=None):
    label = label or host
    r = HostRun(host)
    out, err = os.path.join(work, label + ".out"), os.path.join(work, label + ".err")
    env = dict(server.env)
    if host == "tandem":
        if not args.backtrace:
            env["SWIFT_BACKTRACE"] = "enable=no"
        client = RACK
        argv = [args.tandem, "rack", "--plugin", uri, "--name", RACK, "--client", RACK, "--no-view"]
        p = spawn(argv, env, out, err_path=err)
        ready = lambda: READY.search(read(err)) is not None
    else:
        client = REF
        # jalv's console reads commands from stdin until it ends: a pipe that stays open until the end.
        p = spawn(["jalv", "-x", "-n", REF, uri], env, out, stdin=subprocess.PIPE, err_path=err)
        seen = {"ports": None, "since": time.monotonic()}

        def ready():   # its ports are there (registered once the plugin is instantiated) and stay for 0.3 s
            names = [q["name"] for q in jack_ports(env, REF)]
            if names != seen["ports"]:
                seen["ports"], seen["since"] = names, time.monotonic()
                return False
            return bool(names) and time.monotonic() - seen["since"] >= 0.3
    t0 = time.monotonic()
    ok = wait_until(lambda: p.poll() is not None or ready(), args.start_timeout, step=0.1)
    r.start_s = round(time.monotonic() - t0, 2)
    if p.poll() is not None:
        r.start, r.code = "exited", p.returncode
        reap(p)
    elif not ok:
        r.start = "timeout"
        r.code, _ = stop(p, 3)
    else:
        r.start = "ready"
        r.ports = jack_ports(env, client)
        if host == "tandem" and not r.ports:
            # A ready rack has its ports; none listed is jack_lsp failing on a busy server (seen: a whole plugin
            # "ran" with nothing fed or read). Asked again for a while, then the sweep's own failure: run again.
            wait_until(lambda: p.poll() is not None or bool(jack_ports(env, client)), 3, step=0.2)
            r.ports = jack_ports(env, client)
        r.tids = threads(p.pid)
        if host == "tandem" and not r.ports and p.poll() is None:
            r.probe = {"complete": False, "frames": 0, "seconds": args.seconds, "wall": 0, "harness": True,
                       "errors": ["jack_lsp listed no port of the ready rack"], "ports": []}
        else:
            r.probe = run_probe(r.ports, server, work, label, args)
        r.tids |= threads(p.pid)
        if p.poll() is not None:
            r.stop, r.code = "died", p.returncode
            reap(p)
        else:
            if p.stdin:
                p.stdin.close()
            t1 = time.monotonic()
            r.code, honoured = stop(p, args.stop_timeout)
            r.stop_s = round(time.monotonic() - t1, 2)
            r.stop = "sigterm" if honoured else "ignored-sigterm"
    if p.stdin and not p.stdin.closed:
        p.stdin.close()
    r.stderr = read(err)
    if r.code is not None and r.code == -signal.SIGSEGV:
        r.segfault_in = segfault_library(r.tids | {p.pid})
    return r


def run_probe(ports, server, work, label, args):
    """Noise into every audio (and CV) input, notes into every MIDI input, every audio output read."""
    feed = [q["name"] for q in ports if q["input"] and not q["midi"] and "other" not in q]
    midi = [q["name"] for q in ports if q["input"] and q["midi"]]
    watch = [q["name"] for q in ports if not q["input"] and not q["midi"] and "other" not in q]
    midi_watch = [q["name"] for q in ports if not q["input"] and q["midi"]]
    spec = json.dumps({"seconds": args.seconds, "feed": feed, "midi": midi, "watch": watch, "midiWatch": midi_watch})
    path = os.path.join(work, label + ".probe")
    try:
        r = subprocess.run(["setpriv", "--pdeathsig", "KILL", "--", sys.executable, os.path.realpath(__file__),
                            "--probe", spec], env=server.env, capture_output=True, text=True,
                           timeout=args.seconds * 2 + 20)
    except subprocess.TimeoutExpired:
        return {"complete": False, "frames": 0, "seconds": args.seconds, "wall": args.seconds * 2 + 20,
                "errors": ["the probe timed out"], "ports": [], "harness": True}
    with open(path, "w") as f:
        f.write(r.stdout + r.stderr)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"complete": False, "frames": 0, "seconds": args.seconds, "wall": 0, "harness": True,
                "errors": ["the probe failed: " + (r.stderr.strip()[-300:] or describe_exit(r.returncode))],
                "ports": []}


def run_isolated(uri, server, work, args, seconds):
    """The plugin in an isolated rack under `tandem run` for `seconds`: does the session outlive it? (incidents, its
    exit)"""
    d = os.path.join(work, "isolated")
    os.makedirs(d, exist_ok=True)
    preset = os.path.join(d, "sweep.toml")
    with open(preset, "w") as f:
        f.write('[session]\nname = "sweepiso"\ndirectory = "%s"\nsave_plugins = false\nrestore_plugins = false\n\n'
                '[[rack]]\nname = "%s"\nisolate = true\n[[rack.plugins]]\nuri = "%s"\n' % (d, RACK, uri))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(server.env, SWIFT_BACKTRACE="enable=no")
    err = os.path.join(d, "run.err")
    p = spawn([args.tandem, "run", preset, "--no-view", "--control-port", str(port)], env,
              os.path.join(d, "run.out"), err_path=err)
    time.sleep(seconds)
    alive = p.poll() is None
    code, honoured = stop(p, args.stop_timeout)
    text = read(err)
    down = len(re.findall(r"^tandem: rack %s (crashed|hung|went down)" % RACK, text, re.M))
    return {"aliveAfter": alive, "exit": describe_exit(code), "honouredSigterm": honoured, "rackDown": down,
            "ok": alive and honoured and code == 0 and not TRAP.search(text)}


# ---------------------------------------------------------------------------------------------------------------------
# applyplugin: the LADSPA SDK's own host, offline, as the reference for LADSPA plugins
# ---------------------------------------------------------------------------------------------------------------------

# applyplugin's own limits (its messages): the plugin is not for it, which says nothing about the plugin.
APPLY_CANNOT = re.compile(r"not capable of in-place processing|Mismatch between channel count|has no audio outputs")


class AppliedRun:
    """What happened to `applyplugin` running one LADSPA plugin over a WAV of noise. Verdicts as HostRun's: ran,
    crashed, hung, failed (exited non-zero: the library did not load, the plugin did not instantiate), and cannot (a
    plugin applyplugin does not take: see APPLY_CANNOT)."""
    host = "applyplugin"

    def __init__(self):
        self.code = None
        self.timed_out = False
        self.seconds = None
        self.peak = None          # the peak it prints (before clipping to 16 bits; NaN does not raise it)
        self.stderr = ""
        self.segfault_in = None

    def verdict(self):
        if self.timed_out:
            return "hung", "not done after %g s (killed)" % APPLY_TIMEOUT
        if self.code is not None and self.code < 0:
            return "crashed", describe_exit(self.code)
        cannot = APPLY_CANNOT.search(self.stderr)
        if cannot:
            return "cannot", self.stderr.strip().splitlines()[-1][:160]
        if self.code != 0 or self.peak is None:
            lines = [l.strip() for l in self.stderr.splitlines() if l.strip()]
            return "failed", describe_exit(self.code) + (": " + lines[-1][:160] if lines else "")
        return "ran", ""

    def crash_note(self):
        return " (segfault in %s)" % self.segfault_in if self.segfault_in else ""

    def json(self):
        v, why = self.verdict()
        return {"host": self.host, "verdict": v, "why": why, "exit": describe_exit(self.code), "seconds": self.seconds,
                "peak": self.peak, "segfaultIn": self.segfault_in, "stderrTail": self.stderr[-2000:]}


APPLY_TIMEOUT = 60.0


def run_offline_process(r, argv, out, err):
    """Runs an offline reference host to its end (killed after APPLY_TIMEOUT s) and notes in `r` (an AppliedRun) how
    it ended, its stderr, and the library the kernel names if it segfaulted."""
    p = spawn(argv, dict(os.environ), out, err_path=err)
    t0 = time.monotonic()
    tids = set()
    while p.poll() is None and time.monotonic() < t0 + APPLY_TIMEOUT:
        tids |= threads(p.pid)
        time.sleep(0.05)
    if p.poll() is None:
        r.timed_out = True
        stop(p, 3)
    else:
        reap(p)
    r.code = p.returncode
    r.seconds = round(time.monotonic() - t0, 2)
    r.stderr = read(err)
    if r.code == -signal.SIGSEGV:
        r.segfault_in = segfault_library(tids | {p.pid})


def noise_wav(path, channels, seconds):
    """A 16-bit WAV of the probe's kind of noise (uniform, -6 dBFS peak), a stretch of it per channel."""
    import wave
    rng = random.Random(1)
    frames = int(seconds * RATE)
    data = bytearray()
    for _ in range(frames):
        for _ in range(channels):
            data += int(rng.uniform(-0.5, 0.5) * 32767).to_bytes(2, "little", signed=True)
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(bytes(data))


def run_applyplugin(plugin, work, args):
    """`applyplugin in.wav out.wav LIBRARY LABEL CONTROL...` with Tandem's starting control values."""
    r = AppliedRun()
    label = plugin["uri"].split("/", 1)[1]
    ins = max(1, plugin["audio"][0])           # none: it refuses (a WAV has at least one channel)
    wav_in, wav_out = os.path.join(work, "applyplugin-in.wav"), os.path.join(work, "applyplugin-out.wav")
    noise_wav(wav_in, ins, args.seconds)
    argv = ["applyplugin", wav_in, wav_out, plugin["library"], label] + ["%.9g" % v for v in plugin["controls"]]
    out, err = os.path.join(work, "applyplugin.out"), os.path.join(work, "applyplugin.err")
    with open(os.path.join(work, "applyplugin.argv"), "w") as f:
        f.write(" ".join(argv) + "\n")
    run_offline_process(r, argv, out, err)
    m = re.search(r"^Peak output: (\S+)", read(out), re.M)
    if m:
        try:
            r.peak = float(m.group(1))         # full scale 1 (ladspa-sdk 1.17; older ones printed 16-bit units)
        except ValueError:
            r.peak = None
    for path in (wav_in, wav_out):
        try:
            os.remove(path)
        except OSError:
            pass
    return r


class OfflineRun(AppliedRun):
    """The sweep's offline host running one DSSI (or LADSPA) plugin (`--offline`): as AppliedRun, with NaN seen."""
    host = "the offline host"

    def __init__(self):
        super().__init__()
        self.ports = []

    def verdict(self):
        v, why = super().verdict()
        bad = [p for p in self.ports if p["nonfinite"]]
        if v == "ran" and bad:
            return "nan", "; ".join("%s: %d non-finite samples from frame %d" % (
                p["port"], p["nonfinite"], p["firstNonfinite"]) for p in bad)
        return v, why

    def json(self):
        return dict(super().json(), ports=self.ports)


def run_offline(plugin, work, args):
    """The plugin in the offline host, a process of its own: did it crash, hang, give NaN?"""
    r = OfflineRun()
    spec = json.dumps({"library": plugin["library"], "label": plugin["uri"].split("/", 1)[1],
                       "format": plugin["format"], "controls": plugin["controls"], "seconds": args.seconds})
    out, err = os.path.join(work, "offline.out"), os.path.join(work, "offline.err")
    run_offline_process(r, [sys.executable, os.path.realpath(__file__), "--offline", spec], out, err)
    try:
        got = json.loads(read(out).strip().splitlines()[-1])
        r.ports = got["ports"]
        r.peak = max((q["peak"] for q in r.ports), default=None)
    except (ValueError, IndexError, KeyError):
        pass
    if r.code == 0 and r.peak is None and not r.ports:
        r.peak = 0.0                      # no audio outputs: ran
    return r


# ---------------------------------------------------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------------------------------------------------

def classify(t, j, iso, again=None, ref="jalv"):
    """(outcome, whose, message) from Tandem's run, the reference host's run (`ref`: jalv, applyplugin, or None where
    the format has none), the isolated run and Tandem's second run (each None when not made). A failure of Tandem's
    that a second run does not repeat is `ran`, whose `flaky`."""
    tv, twhy = t.verdict()
    if tv == "harness":
        return "untested", "harness", twhy + " (three times)"
    jv, jwhy = j.verdict() if j else ("not run", "")
    if again is not None and again.verdict()[0] == "ran" and not TRAP.search(t.stderr):
        clean = ("%s and a second run were clean" % ref if jv == "ran" else
                 "a second run was clean (%s)" % reference_note(ref, jv, jwhy))
        return "ran", "flaky", "first run: %s%s; %s" % (twhy, tail_note(t), clean)
    if TRAP.search(t.stderr):
        m = TRAP.search(t.stderr)
        return "tandem-hurt", "tandem", "trapped: " + t.stderr[m.start():].splitlines()[0][:200]
    if tv == "ran":
        return ("ran",) + compare_output(t, j)
    if tv == "refused":
        if not twhy:
            return "tandem-hurt", "tandem", "exit 2 without a message"
        if MALFORMED.search(twhy):
            return "tandem-hurt", "tandem", "refused the name its own catalogue lists: " + twhy
        return "refused", "", twhy
    if tv in ("crashed", "hung", "nan"):
        msg = twhy + t.crash_note() + tail_note(t)
        if jv == "ran" and not (tv == "nan" and ref == "applyplugin"):
            if tv == "nan":
                return "nan", "tandem", msg + "; %s's output is finite" % ref + again_note(again)
            return "tandem-hurt", "tandem", msg + "; %s ran it cleanly" % ref + again_note(again) + (
                "; in an isolated rack the session did not survive it (%s)" % iso["exit"]
                if iso is not None and not iso["ok"] else "")
        if iso is not None and not iso["ok"]:
            return "tandem-hurt", "tandem", msg + "; in an isolated rack the session did not survive it (%s)" % (
                iso["exit"])
        whose = "plugin" if jv in ("crashed", "hung", "nan") else "unknown"
        if ref == "jalv":
            msg += "; jalv: %s" % (jv + (" (" + jwhy + ")" if jwhy else "") + j.crash_note() if j else "not run")
        else:
            msg += "; " + reference_note(ref, jv, jwhy) + (j.crash_note() if j else "")
            if tv == "nan" and jv == "ran":
                msg += " (its 16-bit output cannot show NaN)"
            msg += again_note(again)
        if iso is not None:
            msg += "; isolated: session stayed up, rack down %d time(s), %s" % (iso["rackDown"], iso["exit"])
        return tv, whose, msg
    # An exit other than 0 on SIGTERM or 2 at start (docs/CLI.md, exit codes) is Tandem's, whatever jalv does.
    msg = twhy + tail_note(t)
    if jv == "ran":
        return "tandem-hurt", "tandem", msg + "; %s ran it cleanly" % ref + again_note(again)
    if ref == "jalv":
        return "tandem-hurt", "tandem", msg + "; jalv: %s %s" % (jv, jwhy)
    return "tandem-hurt", "tandem", msg + "; " + reference_note(ref, jv, jwhy) + again_note(again)


# Results the sweep cannot judge by itself, explained from the plugin's source: {URI: (outcome, whose, why)}. Applied
# only where the plugin's outcome is that one (whose then says whose it is, and why is added to the message), so a
# change of behaviour still shows.
KNOWN = {
    "ladspa:slide_2741/slide_tc": (
        "nan", "plugin", "omins' slide.c reads its Fall time control port as if it were an audio buffer "
        "(falltime[i] for every frame in runSlide, in the control variant too): past the one float a control port has, "
        "it reads what the host keeps beside it; the offline host's happen to be finite, Tandem's not"),
}

# A refusal that says the name itself is malformed: the names swept are the ones `tandem plugins` lists.
MALFORMED = re.compile(r"plugin is named (ladspa|dssi):LIBRARY/LABEL|is not a LADSPA or DSSI name")


def reference_note(ref, jv, jwhy):
    """What the reference host made of the plugin, for a message: `applyplugin: crashed (...)`."""
    if ref is None:
        return "no reference host for this format"
    return "%s: %s%s" % (ref, jv, " (" + jwhy + ")" if jwhy else "")


def peak(run):
    if isinstance(run, AppliedRun):
        return run.peak
    outs = (run.probe or {}).get("ports", [])
    return max(p["peak"] for p in outs) if outs else None


def unusual(t, plugin):
    """A clean run of a plugin with audio (or CV) outputs whose output was silent or far over full scale."""
    p = peak(t)
    return bool(plugin["audio"][1] or plugin["cv"][1]) and p is not None and (p == 0 or p > 10)


def compare_output(t, j):
    """(whose, message) of a clean run: what its output was like and, where jalv ran it too, whether jalv's was alike
    (whose `differs from jalv` when one was silent or far over full scale and the other not)."""
    note = quiet_note(t)
    if j is None:
        return "", note
    jv, jwhy = j.verdict()
    if jv != "ran":
        return "", note + "; %s: %s%s" % (j.host, jv, " (" + jwhy + ")" if jwhy else "")
    tp, jp = peak(t), peak(j)
    if jp is None:
        return "", note + "; %s: no audio outputs" % j.host
    differs = (tp == 0) != (jp == 0) or (tp > 10) != (jp > 10)
    return ("differs from %s" % j.host if differs else ""), note + "; %s: %s" % (
        j.host, "silent too" if jp == 0 and tp == 0 else "peak %.3g" % jp)


def again_note(again):
    return "; a second run: %s" % (again.verdict()[1] or again.verdict()[0]) if again else ""


def quiet_note(t):
    """What a clean run's output was like, when it was not plain audio: silence, no ports, only MIDI, very loud."""
    outs = (t.probe or {}).get("ports", [])
    midi = (t.probe or {}).get("midiOut")
    midi_note = "; %d MIDI event(s) out" % midi if midi is not None else ""
    if not outs:
        return "no audio outputs" + midi_note
    top = peak(t)
    if top == 0:
        return "silent output" + midi_note
    if top > 10:
        return "output peak %.3g (finite)" % top
    return ""


def tail_note(t):
    """The last line the host wrote on stderr that is not a log line (an assertion, a plugin's complaint)."""
    lines = [l.strip() for l in t.stderr.splitlines()
             if l.strip() and not re.match(r"^\d{4}-\d\d-\d\dT", l) and not l.startswith("tandem: note:")]
    return " [stderr: %s]" % lines[-1][:160] if lines else ""


# ---------------------------------------------------------------------------------------------------------------------
# The catalogue: `tandem plugins --json`, each plugin's package from dpkg
# ---------------------------------------------------------------------------------------------------------------------

def catalogue(tandem, formats=("lv2",)):
    r = subprocess.run([tandem, "plugins", "--format", ",".join(formats), "--json"], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise SystemExit("tandem plugins --json: %s %s" % (describe_exit(r.returncode), r.stderr.strip()[-500:]))
    plugins = [p for p in json.loads(r.stdout) if p.get("format", "lv2") in formats]
    bundles = sorted({bundle_path(p["bundle"]) for p in plugins})
    owner = packages_of(bundles)
    out = []
    for p in plugins:
        ports = p["ports"]
        def count(kind, inp):
            return sum(1 for q in ports if q["kind"] == kind and q["isInput"] == inp)
        out.append({"uri": p["uri"], "name": p.get("name", ""), "package": owner.get(bundle_path(p["bundle"]), "?"),
                    "format": p.get("format", "lv2"), "uniqueID": p.get("uniqueID"),
                    "library": bundle_path(p["bundle"]),
                    # What Tandem starts each input control at, in port order (applyplugin is given the same).
                    "controls": [q.get("defaultValue", q.get("minimum", 0.0)) for q in ports
                                 if q["kind"] == "control" and q["isInput"]],
                    "audio": (count("audio", True), count("audio", False)),
                    "cv": (count("cv", True), count("cv", False)),
                    "midiIn": any(q["kind"] == "atom" and q["isInput"] and q.get("supportsMIDI") for q in ports),
                    "missing": p.get("missingFeatures", [])})
    return out


def bundle_path(uri):
    return urllib.parse.unquote(urllib.parse.urlparse(uri).path).rstrip("/")


def packages_of(paths):
    out = {}
    r = subprocess.run(["dpkg", "-S"] + paths, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        pkgs, _, path = line.partition(": ")
        out[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    for path in paths:
        out.setdefault(path, "(not packaged)")
    return out


def port_summary(p):
    parts = ["%d→%d audio" % tuple(p["audio"])]
    if any(p["cv"]):
        parts.append("%d→%d CV" % tuple(p["cv"]))
    if p["midiIn"]:
        parts.append("MIDI in")
    return ", ".join(parts)


def select(plugins, args):
    if args.list:
        wanted = []
        with open(args.list) as f:
            for line in f:
                line = re.split(r"(?:^|\s)#", line, 1)[0].strip()     # a comment; a URI's own # stays
                if line:
                    wanted.append(line)
        by = {p["uri"]: p for p in plugins}
        missing = [u for u in wanted if u not in by]
        for u in missing:
            log("not installed (skipped): %s" % u)
        plugins = [by[u] for u in wanted if u in by]
    if args.filter:
        rx = re.compile(args.filter)
        plugins = [p for p in plugins if rx.search(p["uri"])]
    if not args.list:
        plugins.sort(key=lambda p: p["uri"])
    return plugins[:args.limit] if args.limit else plugins


# ---------------------------------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------------------------------

def server_name(slot):
    """One name per job of this sweep (another sweep beside it has its own); a name is used again for every plugin
    of the job, so that a server that died without unregistering gives its slot in JACK2's registry back."""
    return "plugin-sweep-%d-%d" % (os.getpid() % 100000, slot)


def sweep_one(plugin, slot, workroot, args):
    """One plugin: Tandem's rack; where it failed, the reference host (jalv for LV2, applyplugin for LADSPA, none for
    DSSI), Tandem once more (when the reference ran it, or could not judge it), and an isolated rack (when it crashed
    or hung). Each JACK host on a fresh server."""
    uri = plugin["uri"]
    ref = REFERENCE.get(plugin.get("format", "lv2"))
    work = os.path.join(workroot, re.sub(r"[^A-Za-z0-9]+", "-", uri).strip("-")[-80:])
    os.makedirs(work, exist_ok=True)
    t0 = time.monotonic()

    def on_server(run, label):
        server = Server(server_name(slot), work, label)
        try:
            return run(server), server.alive()
        finally:
            server.stop()

    for attempt in range(1, 4):
        # A JACK server that failed under the sweep (or a probe that could not join it) says nothing about the
        # plugin: the whole run again, on a new server, up to three times.
        t, server_ok = on_server(lambda s: run_host("tandem", uri, s, work, args), "tandem")
        if t.verdict()[0] != "harness" and server_ok:
            break
        log("%s: the sweep's JACK side failed (%s), attempt %d of 3" % (
            uri, t.verdict()[1] if server_ok else "the server died", attempt))
    tandem_s = time.monotonic() - t0
    jalv = again = iso = None

    def reference():
        if ref == "jalv":
            return on_server(lambda s: run_host("jalv", uri, s, work, args), "jalv")[0]
        if ref == "applyplugin" and t.verdict()[0] != "nan":   # (its 16-bit output cannot show NaN)
            r = run_applyplugin(plugin, work, args)             # offline: no server
            if r.verdict()[0] != "cannot":
                return r
        return run_offline(plugin, work, args)

    verdict = t.verdict()[0]
    if verdict == "ran" and unusual(t, plugin) and not args.no_reference and ref:
        # Silent or very loud: is the reference's output so too? (A default read wrongly can silence an oscillator.)
        jalv = reference()
    elif verdict not in ("ran", "refused", "harness"):
        if ref and not args.no_reference:
            jalv = reference()
        if jalv is not None and jalv.verdict()[0] == "ran" or (ref != "jalv" and (
                jalv is None or jalv.verdict()[0] in ("cannot", "failed", "ran"))):
            # Before blaming Tandem, once more: a loaded machine can starve a cycle of any client. (Where no reference
            # host could judge the plugin, the second run is all there is to tell a flaky run from a plugin's fault.)
            again, _ = on_server(lambda s: run_host("tandem", uri, s, work, args, label="tandem-again"),
                                 "tandem-again")
        if verdict in ("crashed", "hung") and not args.no_isolated:
            # One stuck while starting is killed by the session after 10 s: long enough to see that.
            iso, _ = on_server(lambda s: run_isolated(uri, s, work, args,
                                                      13 if t.start == "timeout" else args.seconds + 2), "isolated")
    outcome, whose, message = classify(t, jalv, iso, again, jalv.host if jalv else ref)
    if uri in KNOWN and KNOWN[uri][0] == outcome:
        whose, message = KNOWN[uri][1], message + "; known: " + KNOWN[uri][2]
    if not server_ok:
        message += " (the JACK server died too)"
    rec = {"uri": uri, "name": plugin["name"], "package": plugin["package"], "ports": port_summary(plugin),
           "format": plugin.get("format", "lv2"), "uniqueID": plugin.get("uniqueID"), "outcome": outcome, "whose": whose, "message": message, "seconds": round(time.monotonic() - t0, 2),
           "tandemSeconds": round(tandem_s, 2), "startSeconds": t.start_s, "tandem": t.json(),
           "jalv" if ref == "jalv" else "reference": jalv.json() if jalv else None, "tandemAgain": again.json() if again else None, "isolated": iso}
    if outcome == "ran" and not whose and not args.keep_logs:
        shutil.rmtree(work, ignore_errors=True)
    else:
        rec["logs"] = work
    return rec


def sweep(plugins, args):
    workroot = args.workdir or tempfile.mkdtemp(prefix="tandem-plugin-sweep-")
    os.makedirs(workroot, exist_ok=True)
    log("%d plugin(s), %d job(s), %g s each; logs of what did not run cleanly under %s" % (
        len(plugins), args.jobs, args.seconds, workroot))
    slots = queue.Queue()
    for i in range(1, args.jobs + 1):
        slots.put(i)
    results, done = [], [0]
    lock = threading.Lock()

    def task(p):
        slot = slots.get()
        try:
            rec = sweep_one(p, slot, workroot, args)
        except Exception as e:  # noqa: BLE001  (one plugin's harness failure must not end the sweep)
            rec = {"uri": p["uri"], "name": p["name"], "package": p["package"], "ports": port_summary(p),
                   "format": p.get("format", "lv2"), "uniqueID": p.get("uniqueID"), "outcome": "untested", "whose": "harness", "message": "the sweep itself failed: %r" % e,
                   "seconds": 0, "tandemSeconds": 0}
        finally:
            slots.put(slot)
        with lock:
            done[0] += 1
            results.append(rec)
            log("[%d/%d] %-11s %5.1f s  %s%s" % (done[0], len(plugins), rec["outcome"], rec["seconds"], p["uri"],
                                                 "  " + rec["message"][:150] if rec["message"] else ""))
        return rec

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(task, plugins))
    order = {p["uri"]: i for i, p in enumerate(plugins)}
    return sorted(results, key=lambda r: order[r["uri"]])


# ---------------------------------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------------------------------

def failed(r):
    """Tandem's own failures, and plugins the sweep could not judge: what makes it exit 1."""
    return r["outcome"] in ("tandem-hurt", "untested") or r["whose"] == "tandem"


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def group_refusals(results):
    groups = {}
    for r in results:
        if r["outcome"] != "refused":
            continue
        m = r["message"].replace(r["uri"], "URI")
        m = re.sub(r"^the rack %s's plugin chain cannot run as asked: " % RACK, "", m)
        m = re.sub(r"; nothing started \(.*?\)", "", m)
        m = re.sub(r"\bplugin [^\s:]+: ", "plugin P: ", m)
        groups.setdefault(m, []).append(r)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def timing(results, key="seconds"):
    secs = sorted(r[key] for r in results if r.get(key))
    if not secs:
        return {}
    return {"mean": statistics.mean(secs), "median": statistics.median(secs),
            "p95": secs[min(len(secs) - 1, int(0.95 * len(secs)))], "max": secs[-1], "total": sum(secs)}


# The report's groups: LV2 on its own (its summary between BEGIN and END, as before LADSPA and DSSI were swept), LADSPA
# and DSSI together (between LD_BEGIN and LD_END). (name, formats, markers, heading where the markers are new)
GROUPS = [("LV2", ("lv2",), (BEGIN, END), "## Plugin sweep"),
          ("LADSPA and DSSI", ("ladspa", "dssi"), (LD_BEGIN, LD_END), "## Plugin sweep: LADSPA and DSSI")]


def grouped(results):
    """[(group, its results)] for each group with results, in GROUPS' order."""
    out = []
    for g in GROUPS:
        rs = [r for r in results if r.get("format", "lv2") in g[1]]
        if rs:
            out.append((g, rs))
    return out


def summary_lines(results, meta, group=GROUPS[0]):
    counts = {o: sum(1 for r in results if r["outcome"] == o) for o in OUTCOMES}
    pkgs = sorted({r["package"] for r in results})
    t = timing(results)
    tandem_nan = sum(1 for r in results if r["outcome"] == "nan" and r["whose"] == "tandem")
    lv2 = group[1] == ("lv2",)
    formats = "" if lv2 else " (%s)" % ", ".join(
        "%d %s" % (n, f.upper()) for f, n in ((f, sum(1 for r in results if r.get("format") == f)) for f in group[1])
        if n)
    lines = [
        "Swept by `scripts/plugin-sweep.py%s`%s on %s: %d plugins%s from %d packages, %g s of noise and notes each on a "
        "private dummy server (48 kHz, period 256), %d job(s) on %d cores; %.0f s in all (%.1f min). Tandem: `%s`." % (
            meta["selection"], " in %d slices (each a `--filter`, reported together with `--from-json`)" % meta[
                "slices"] if meta.get("slices", 1) > 1 else "", meta["date"], len(results), formats, len(pkgs),
            meta["seconds"], meta["jobs"],
            os.cpu_count(), meta["elapsed"], meta["elapsed"] / 60, meta["tandem"]),
        "",
        "| outcome | plugins |",
        "|---|---|",
    ]
    lines += ["| %s | %d |" % (o, counts[o]) for o in OUTCOMES]
    flaky = sum(1 for r in results if r["whose"] == "flaky")
    ref = "jalv and a second run clean" if lv2 else "a second run clean, and the reference host where it was run"
    lines += ["", "Tandem died or hung where the plugin did not: %d. NaN/inf of Tandem's making: %d. Failed once "
              "and then ran (%s; counted as ran): %d." % (counts["tandem-hurt"], tandem_nan, ref, flaky)]
    if not lv2:
        refs = {}
        for r in results:
            if r.get("reference"):
                refs.setdefault(r["reference"]["host"], {}).setdefault(r["reference"]["verdict"], 0)
                refs[r["reference"]["host"]][r["reference"]["verdict"]] += 1
        lines += ["Reference hosts, run where Tandem failed or its output was silent or far over full scale: "
                  "applyplugin for LADSPA (the offline host where applyplugin cannot take the plugin), the sweep's "
                  "offline host for DSSI (jack-dssi-host needs the ALSA sequencer). Runs: %s." % (
                      "; ".join("%s: %s" % (h, ", ".join("%s %d" % kv for kv in sorted(v.items())))
                                for h, v in sorted(refs.items())) or "none")]
    if t:
        r = timing(results, "tandemSeconds")
        lines += ["Time per plugin (server start to stop, with %s and the isolated run where made): mean %.1f s, "
                  "median %.1f s, 95th percentile %.1f s, max %.1f s; Tandem's rack alone: mean %.1f s, median %.1f s, "
                  "max %.1f s." % ("jalv's" if lv2 else "the reference host's", t["mean"], t["median"], t["p95"],
                                   t["max"], r["mean"], r["median"], r["max"])]
    notable = [r for r in results if r["outcome"] not in ("ran", "refused") or r["whose"] == "flaky"]
    if notable:
        lines += ["", "| plugin | package | outcome | whose | what happened | s |", "|---|---|---|---|---|---|"]
        lines += ["| %s | %s | %s | %s | %s | %.1f |" % (cell(r["uri"]), r["package"], r["outcome"], r["whose"],
                                                        cell(r["message"]), r["seconds"]) for r in notable]
    differ = [r for r in results if r["whose"].startswith("differs from ")]
    if differ:
        lines += ["", "Ran, but the output was silent or far over full scale under Tandem and not under %s (or the "
                  "other way round):" % ("jalv" if lv2 else "the reference host"), "",
                  "| plugin | package | output | s |", "|---|---|---|---|"]
        lines += ["| %s | %s | %s | %.1f |" % (cell(r["uri"]), r["package"], cell(r["message"]), r["seconds"])
                  for r in differ]
    groups = group_refusals(results)
    if groups:
        lines += ["", "Refusals, by message:", "", "| plugins | message | which |", "|---|---|---|"]
        for msg, rs in groups:
            which = ", ".join(r["uri"] for r in rs[:6]) + (", … (%d more)" % (len(rs) - 6) if len(rs) > 6 else "")
            lines.append("| %d | %s | %s |" % (len(rs), cell(msg), cell(which)))
    by_pkg = {}
    for r in results:
        by_pkg.setdefault(r["package"], {o: 0 for o in OUTCOMES})[r["outcome"]] += 1
    lines += ["", "| package | " + " | ".join(OUTCOMES) + " |", "|---|" + "---|" * len(OUTCOMES)]
    lines += ["| %s | %s |" % (k, " | ".join(str(v[o]) for o in OUTCOMES)) for k, v in sorted(by_pkg.items())]
    return lines


def markdown(results, meta):
    parts = grouped(results)
    if len(parts) == 1:
        lines = ["# Plugin sweep", ""] + summary_lines(results, meta, parts[0][0])
    else:
        lines = ["# Plugin sweep"]
        for g, rs in parts:
            lines += ["", "## " + g[0], ""] + summary_lines(rs, meta, g)
    lines += ["", "## Every plugin", "", "s: the plugin's whole time (with %s and the isolated run where made); "
              "rack s: Tandem's rack alone, server start to stop." % (
                  "jalv's" if [g for g, _ in parts] == [GROUPS[0]] else "the reference host's"), "",
              "| plugin | package | ports | outcome | whose | message | rack s | s |",
              "|---|---|---|---|---|---|---|---|"]
    lines += ["| %s | %s | %s | %s | %s | %s | %.1f | %.1f |" % (
        cell(r["uri"]), r["package"], r["ports"], r["outcome"], r["whose"], cell(r["message"]), r["tandemSeconds"],
        r["seconds"]) for r in results]
    return "\n".join(lines) + "\n"


def splice_doc(path, results, meta):
    """Each group's summary between its markers (appended under a heading of its own where they are not there yet);
    a group not swept keeps what it had."""
    doc = read(path, 10 ** 8) if os.path.exists(path) else ""
    for (name, _, (begin, end), heading), rs in grouped(results):
        block = "\n".join([begin] + summary_lines(rs, meta, (name, _, (begin, end), heading)) + [end])
        if begin in doc and end in doc:
            doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, doc, flags=re.S)
        else:
            doc = doc.rstrip() + "\n\n" + heading + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(doc)


# ---------------------------------------------------------------------------------------------------------------------

def install(formats=FORMATS):
    wanted = sorted({p for f in formats for p in PACKAGES[f]})
    missing = [p for p in wanted
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True).stdout
               != "install ok installed"]
    if not missing:
        log("install: all %d plugin packages installed" % len(wanted))
        return
    if os.geteuid() != 0:
        raise SystemExit("install: missing packages; run:\n  sudo apt-get update && sudo apt-get install -y %s"
                         % " ".join(missing))
    log("install: " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing, env=env, check=True)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tandem", default=os.path.join(ROOT, ".build", "debug", "tandem"),
                    help="the tandem binary (default: .build/debug/tandem of this repository)")
    ap.add_argument("--install", action="store_true", help="apt-install the missing plugin packages first")
    ap.add_argument("--install-only", action="store_true", help="install and stop")
    ap.add_argument("--format", default=",".join(FORMATS),
                    help="the plugin formats to sweep, comma-separated (default: %(default)s)")
    ap.add_argument("--filter", help="only URIs matching this regular expression")
    ap.add_argument("--list", help="only the URIs in this file (one a line; # at the start or after a space begins "
                    "a comment), in its order")
    ap.add_argument("--limit", type=int, help="at most N plugins")
    ap.add_argument("--jobs", type=int, default=1, help="plugins at once, each on its own server (JACK2: 8 at most)")
    ap.add_argument("--seconds", type=float, default=2.0, help="audio time each plugin is fed and read")
    ap.add_argument("--start-timeout", type=float, default=30.0, help="a host not ready after this has hung")
    ap.add_argument("--stop-timeout", type=float, default=10.0, help="a host that outlives SIGTERM this long has hung")
    ap.add_argument("--out", help="write the markdown report here (default: stdout)")
    ap.add_argument("--json", help="write every result, with each host's details, here")
    ap.add_argument("--doc", help="splice the summary into this file: LV2's between %s and %s, LADSPA's and DSSI's "
                    "between %s and %s" % (BEGIN, END, LD_BEGIN, LD_END))
    ap.add_argument("--workdir", help="where logs go (default: a new folder under $TMPDIR)")
    ap.add_argument("--keep-logs", action="store_true", help="keep the logs of plugins that ran cleanly too")
    ap.add_argument("--no-reference", action="store_true",
                    help="do not run the reference host (jalv, applyplugin) where Tandem failed")
    ap.add_argument("--from-json", nargs="+", metavar="JSON",
                    help="sweep nothing: report (--out, --doc, --json) the results these --json files hold, as one "
                    "sweep (a sweep run in slices; a plugin in more than one file counts once, the last file's, "
                    "unless that one is untested)")
    ap.add_argument("--no-isolated", action="store_true", help="do not run crashing or hanging plugins isolated")
    ap.add_argument("--backtrace", action="store_true", help="leave the Swift runtime's backtracer on in the rack")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    ap.add_argument("--offline", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.jobs < 1 or args.jobs > 8:
        ap.error("--jobs takes 1 to 8")
    if args.seconds <= 0:
        ap.error("--seconds must be positive")
    args.formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = [f for f in args.formats if f not in FORMATS]
    if unknown or not args.formats:
        ap.error("--format takes %s, comma-separated (not %s)" % (", ".join(FORMATS), ", ".join(unknown) or "empty"))
    return args


def check_tools(args):
    tools = TOOLS + [REFERENCE[f] for f in args.formats if REFERENCE[f] in ("jalv", "applyplugin")
                     and not args.no_reference]
    missing = [t for t in tools if not shutil.which(t)]
    if not os.access(args.tandem, os.X_OK):
        missing.append(args.tandem)
    if missing:
        log("missing: %s (make deps installs the JACK tools, jalv and ladspa-sdk's applyplugin; build tandem or give "
            "--tandem)" % ", ".join(missing))
        sys.exit(3)


def selection_of(args):
    return "".join(" --%s %s" % (k, v) for k, v in (
        ("format", args.format if args.formats != FORMATS else None), ("list", args.list), ("filter", args.filter),
        ("limit", args.limit)) if v)


def merged(paths):
    """(results, meta) of the sweeps these --json files hold, as one: a plugin the last file has wins (unless it was
    untested there and judged in an earlier one); the time is the slices' total."""
    by, metas = {}, []
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        metas.append(d)
        for r in d["plugins"]:
            if r["outcome"] != "untested" or by.get(r["uri"], r)["outcome"] == "untested":
                by[r["uri"]] = r
    formats = sorted({m.get("format", "lv2") for m in metas})
    meta = {"date": max(m["date"] for m in metas), "tandem": metas[-1]["tandem"], "seconds": metas[-1]["seconds"],
            "jobs": max(m["jobs"] for m in metas), "elapsed": sum(m["elapsed"] for m in metas),
            "selection": (" --format " + formats[0] if len(formats) == 1 and formats[0] != ",".join(FORMATS) else "")
            if len(paths) > 1 else metas[0]["selection"], "format": ",".join(formats),
            "slices": sum(m.get("slices", 1) for m in metas)}
    return sorted(by.values(), key=lambda r: r["uri"]), meta


def main(argv):
    args = parse_args(argv)
    if args.probe:
        return probe_main(args.probe)
    if args.offline:
        return offline_main(args.offline)
    if args.install or args.install_only:
        install(args.formats)
        if args.install_only:
            return 0
    args.tandem = os.path.abspath(args.tandem)
    if args.from_json:
        results, meta = merged(args.from_json)
    else:
        check_tools(args)
        clean = os.path.join(ROOT, "scripts", "clean-jack-shm.sh")
        if os.path.exists(clean):
            subprocess.run([clean], stdout=sys.stderr)
        started = time.monotonic()
        plugins = select(catalogue(args.tandem, args.formats), args)
        if not plugins:
            log("no plugin selected")
            return 1
        try:
            results = sweep(plugins, args)
        except KeyboardInterrupt:
            stop_everything()
            log("interrupted")
            return 130
        meta = {"date": datetime.date.today().isoformat(), "tandem": args.tandem, "seconds": args.seconds,
                "jobs": args.jobs, "elapsed": time.monotonic() - started, "selection": selection_of(args),
                "format": args.format}
    report = markdown(results, meta)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report)
    else:
        sys.stdout.write(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(meta, counts={o: sum(1 for r in results if r["outcome"] == o) for o in OUTCOMES},
                           plugins=results), f, indent=1)
    if args.doc:
        splice_doc(args.doc, results, meta)
    bad = [r for r in results if failed(r)]
    counts = ", ".join("%s %d" % (o, sum(1 for r in results if r["outcome"] == o)) for o in OUTCOMES)
    log("%d plugins in %.0f s: %s" % (len(results), meta["elapsed"], counts))
    for r in bad:
        log("TANDEM FAILED: %s: %s: %s" % (r["uri"], r["outcome"], r["message"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
