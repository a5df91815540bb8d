import Coordinator
import Engine
import Foundation
import Loudness
#if canImport(Glibc)
import Glibc
#endif

/// The live status display: on a terminal, a block of lines redrawn in place about 20 times a second (meters with
/// peak hold and clip marks, take, disk, ring, xruns, playback progress); otherwise one plain line a second; with
/// `--json`, one JSON status line every half second. Colours only on a terminal that has them (and no NO_COLOR).
final class LiveView {
    enum Mode { case terminal, plain, json, off }
    let mode: Mode
    private let colors: Bool
    private var linesDrawn = 0
    private var lastEmit = Date.distantPast

    init(json: Bool, enabled: Bool = true) {
        let tty = isatty(STDOUT_FILENO) == 1
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        mode = !enabled ? .off : json ? .json : tty && term != "dumb" && !term.isEmpty ? .terminal : .plain
        colors = mode == .terminal && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    var interval: Double {
        switch mode {
        case .terminal: return 0.05
        case .json: return 0.5
        case .plain: return 1
        case .off: return .infinity
        }
    }

    /// Draws if it is time to. `above` are event lines to print before the block (they scroll up).
    func update(_ status: SessionStatus, events: [String] = []) {
        // A terminal or pipe that went away: nothing more is drawn (the take goes on; see Console).
        if Console.stdoutGone { return }
        guard mode != .off else {
            for e in events { say(e) }
            return
        }
        let now = Date()
        if mode == .terminal {
            var out = ""
            if linesDrawn > 0 { out += "\u{1B}[\(linesDrawn)A" }          // back to the top of the block
            for e in events { out += "\u{1B}[2K" + e + "\n" }
            // Each line is cut to the terminal's width: a wrapped line would throw the redraw's line count off.
            let width = Self.terminalColumns()
            let block = render(status, columns: width).map { Self.fit($0, columns: width) }
            for line in block { out += "\u{1B}[2K" + line + "\n" }
            if linesDrawn > block.count { for _ in 0..<(linesDrawn - block.count) { out += "\u{1B}[2K\n" } }
            if events.isEmpty && now.timeIntervalSince(lastEmit) < interval { return }
            out = (linesDrawn == 0 ? "\u{1B}[?25l" : "") + out
            Console.out(out)
            linesDrawn = max(block.count, linesDrawn)
            lastEmit = now
            return
        }
        for e in events { say(e) }
        guard now.timeIntervalSince(lastEmit) >= interval else { return }
        lastEmit = now
        say(mode == .json ? status.json() : plainLine(status))
    }

    /// Restores the cursor after the last frame.
    func finish() {
        if mode == .terminal && linesDrawn > 0 { Console.out("\u{1B}[?25h") }
    }

    // MARK: Rendering

    private func paint(_ s: String, _ code: String) -> String { colors ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }

    /// A meter bar from -60 to 0 dBFS: green below -18, yellow to -6, red above; `|` marks the peak hold.
    func bar(rms: Double, hold: Double, width: Int = 40) -> String {
        func cell(_ db: Double) -> Int { Int(((max(-60, min(0, db)) + 60) / 60 * Double(width)).rounded()) }
        let filled = rms.isFinite ? cell(rms) : 0
        let holdAt = hold.isFinite ? min(width - 1, cell(hold)) : -1
        var s = ""
        for i in 0..<width {
            let db = Double(i) / Double(width) * 60 - 60
            let code = db < -18 ? "32" : db < -6 ? "33" : "31"
            if i == holdAt && i >= filled { s += paint("|", code) } else if i < filled { s += paint("#", code) } else { s += "." }
        }
        return s
    }

    static func db(_ v: Double) -> String { v.isFinite ? String(format: "%5.1f", v) : " -inf" }

    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "--:--:--.-" }
        let s = Int(seconds)
        return String(format: "%d:%02d:%02d.%d", s / 3600, s / 60 % 60, s % 60, Int((seconds - Double(s)) * 10))
    }

    static func bytes(_ n: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(n), i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return String(format: i == 0 ? "%.0f %@" : "%.1f %@", v, units[i])
    }

    static func number(_ v: Float) -> String { v == v.rounded() && abs(v) < 1e6 ? String(Int(v)) : String(format: "%.3g", v) }

    /// The terminal's width in columns (80 when it cannot be read).
    static func terminalColumns() -> Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// `line` cut to fit `columns - 1` visible characters (escape sequences are kept and not counted; a colour is
    /// reset after a cut).
    static func fit(_ line: String, columns: Int) -> String {
        let room = max(1, columns - 1)
        var out = ""
        var visible = 0
        var inEscape = false
        var cut = false
        for c in line {
            if inEscape {
                out.append(c)
                if c.isLetter { inEscape = false }
                continue
            }
            if c == "\u{1B}" {
                inEscape = true
                out.append(c)
                continue
            }
            if visible >= room {
                cut = true
                continue
            }
            out.append(c)
            visible += 1
        }
        return cut ? out + "\u{1B}[0m" : out
    }

    func render(_ s: SessionStatus, columns: Int = 80) -> [String] {
        var lines: [String] = []
        let head = "Tandem · \(s.session) · server \(s.server) \(s.sampleRate) Hz / \(s.period)"
        lines.append(s.serverLost ? head + " · " + paint("JACK SERVER LOST: waiting", "31;1") : head)
        if let r = s.recorder {
            let state = r.recording ? paint("● REC", "31;1") + " take \(r.take ?? 0) \(Self.clock(r.seconds))" : paint("armed", "33")
            var disk = ""
            if let free = r.freeBytes {
                disk = " · free \(Self.bytes(free))"
                if let left = r.secondsLeft { disk += " (\(Self.clock(left).dropLast(2)) left)" }
            }
            lines.append("\(state) · \(Self.bytes(r.bytes))\(disk)")
            let ring = r.ringCapacity > 0 ? Double(r.ringFill) / Double(r.ringCapacity) * 100 : 0
            lines.append(String(format: "ring %4.1f %% · xruns %d · overruns %d frames · missed %d frames · cycle p99 %.1f µs",
                                ring, r.xruns, r.droppedFrames, r.missedFrames, r.cycle.p99Micros))
            let width = max(4, s.meters.map(\.port.count).max() ?? 4)
            for m in s.meters {
                let name = m.port.padding(toLength: width, withPad: " ", startingAt: 0)
                let clip = m.clip ? paint(" CLIP", "41;97") : "     "
                // The bar gives way first on a narrow terminal: name, bar, two readings and the clip mark fit.
                let barWidth = max(8, min(40, columns - width - 27))
                lines.append("\(name) \(bar(rms: m.rmsDB, hold: m.holdDB, width: barWidth)) \(Self.db(m.rmsDB)) rms \(Self.db(m.peakDB)) pk\(clip)")
            }
        }
        if let p = s.player {
            let state = p.playing ? "▶ playing" : p.paused ? "‖ paused" : "■ stopped"
            let ratio = p.duration > 0 ? p.seconds / p.duration : 0
            let fraction = ratio.isFinite ? max(0, min(1, ratio)) : 0
            let width = 30
            let done = Int(fraction * Double(width))
            let progress = String(repeating: "=", count: done) + (done < width ? ">" : "") + String(repeating: " ", count: max(0, width - done - 1))
            let item = p.item.map { "\($0 + 1)/\(p.items)" } ?? "-/\(p.items)"
            let name = p.path.map { ($0 as NSString).lastPathComponent } ?? "-"
            lines.append("\(state) \(item) [\(progress)] \(Self.clock(p.seconds)) / \(Self.clock(p.duration)) \(name)")
            lines.append(String(format: "play ring %4.1f %% · underruns %d frames · missed %d frames · xruns %d",
                                p.ringCapacity > 0 ? Double(p.ringFill) / Double(p.ringCapacity) * 100 : 0, p.underrunFrames,
                                p.missedFrames, p.xruns))
        }
        for rack in s.racks {
            var line = "\(rack.running ? "◆" : paint("✖", "31")) rack \(rack.name) \(rack.inputs)→\(rack.outputs)"
                + (rack.isolated ? " · isolated" : "") + " · cycles \(rack.cycles)"
            if let c = rack.cycle { line += String(format: " · p99 %.1f µs", c.p99Micros) }
            if let x = rack.xruns { line += " · xruns \(x)" }
            if rack.isolated {
                line += " · crashes \(rack.crashes ?? 0) hangs \(rack.hangs ?? 0)"
                if let t = rack.lastRecoverySeconds { line += String(format: " · back in %.2f s", t) }
            }
            lines.append(line)
        }
        for p in s.loudness ?? [] { lines.append(Self.loudnessLine(p)) }
        for engine in ["recorder", "player"] + s.racks.map(\.name) {
            guard let chain = s.plugins[engine] else { continue }
            let plugins = chain.plugins.map { p in
                "\(p.name)(" + p.controls.map { "\($0.symbol)=\(Self.number($0.value))" }.joined(separator: " ") + ")"
            }
            var line = "\(engine) fx: " + (plugins.isEmpty ? "none" : plugins.joined(separator: " → "))
            if chain.latencyFrames > 0 { line += " · latency \(chain.latencyFrames) frames" }
            lines.append(line)
            let costs = chain.plugins.compactMap { p in
                p.timing.map { p.name + String(format: " %.1f/%.1f µs", $0.meanMicros, $0.maxMicros) + ($0.overBudget > 0 ? " (\($0.overBudget) over)" : "") }
            }
            if !costs.isEmpty { lines.append("  cost (mean/max): " + costs.joined(separator: " · ")) }
            for problem in chain.problems { lines.append(paint("  ! " + problem, "33")) }
        }
        return lines
    }

    /// "loudness recorder in_1+in_2 · M -23.0 S -23.1 I -23.0 LUFS · LRA 4.2 LU · TP -1.3 dBTP".
    static func loudnessLine(_ p: ProgrammeLoudness) -> String {
        let t = LoudnessReading.text
        return "loudness \(p.engine ?? "") \(p.channels.joined(separator: "+")) · M \(t(p.momentary)) S \(t(p.shortTerm)) "
            + "I \(t(p.integrated)) LUFS · LRA \(t(p.range)) LU · TP \(t(p.truePeak)) dBTP"
    }

    func plainLine(_ s: SessionStatus) -> String {
        var parts: [String] = []
        if let r = s.recorder {
            parts.append(r.recording ? "rec take \(r.take ?? 0) \(String(format: "%.1f", r.seconds)) s \(Self.bytes(r.bytes))" : "armed")
            parts.append("dropped \(r.droppedFrames) missed \(r.missedFrames) xruns \(r.xruns)")
            parts.append("meters " + s.meters.map { "\($0.port) \(Self.db($0.peakDB).trimmingCharacters(in: .whitespaces))/\(Self.db($0.rmsDB).trimmingCharacters(in: .whitespaces))" }.joined(separator: " "))
        }
        for rack in s.racks {
            parts.append("rack \(rack.name) \(rack.running ? "running" : "DOWN") cycles \(rack.cycles)"
                         + (rack.isolated ? " crashes \(rack.crashes ?? 0) hangs \(rack.hangs ?? 0)" : ""))
        }
        if let p = s.player {
            parts.append("play \(p.item.map { "\($0 + 1)/\(p.items)" } ?? "-") \(String(format: "%.1f/%.1f", p.seconds, p.duration)) s underruns \(p.underrunFrames) missed \(p.missedFrames) xruns \(p.xruns)")
        }
        if s.serverLost { parts.append("SERVER LOST") }
        return "status: " + parts.joined(separator: " · ")
    }
}
