import Foundation
import Loudness
import Plugins
import Presets

extension Renderer {
    /// Brings a job's output to `target` with one gain (docs/RENDER.md "Loudness and normalizing").
    ///
    /// Without a limiter the chain runs once into a spool (`RenderSpool`, measured as it is written); the gain is
    /// the target less the measured integrated loudness, and the true peak moves by exactly that gain, so a peak
    /// that would pass the ceiling is refused before anything is written; otherwise the spool is read back once,
    /// scaled, into the output (measured again as it is written: the report's `loudness`).
    ///
    /// With a limiter (an active plugin of class lv2:LimiterPlugin) the gain goes before it, at the chain's input,
    /// and the chain runs again from the start with each new gain (secant steps) until the output is within
    /// `LoudnessTarget.tolerance` of the target, at most `LoudnessTarget.maxPasses` times; the last pass's spool is
    /// the output. Its true peak is then the limiter's doing, and one past the ceiling is refused.
    static func normalize(_ target: LoudnessTarget, run: inout Run, again: (Double) throws(RenderError) -> Run,
                          limiter: String?, output: RenderOutput, meter: () -> LoudnessMeter?, mainOut: Int,
                          commands: [(event: AutomationEvent, action: AutomationAction)], midiEvents: [AutomationEvent],
                          tailFixed: Int, progress: Progress?,
                          stop: (() -> Int32?)?) throws(RenderError) -> RenderReport.Normalization {
        let name = (run.job.output as NSString).lastPathComponent
        func pass(_ run: inout Run) throws(RenderError) -> (RenderSpool, LoudnessReading) {
            let spool = try RenderSpool(besides: run.job.output, channels: mainOut, meter: meter())
            try run.loop(commands: commands, midiEvents: midiEvents, tailFixed: tailFixed, output: spool,
                         progress: progress, stop: stop)
            return (spool, spool.meter?.reading ?? LoudnessReading())
        }
        func integrated(_ r: LoudnessReading) throws(RenderError) -> Double {
            guard let i = r.integrated else {
                throw RenderError(.badInput, "cannot normalize '\(name)' to \(Self.lufs(target.lufs)): the chain's output"
                                  + " has no integrated loudness (\(r.note ?? "nothing above the gate"))")
            }
            return i
        }

        guard let limiter else {
            let (spool, measured) = try pass(&run)
            let gain = target.lufs - (try integrated(measured))
            if let tp = measured.truePeak, tp + gain > target.truePeakCeiling {
                throw RenderError(.badInput, "cannot normalize '\(name)' to \(Self.lufs(target.lufs)): it measures"
                                  + " \(Self.lufs(measured.integrated)), and the gain of \(Self.db(gain)) would put its"
                                  + " true peak at \(Self.dbtp(tp + gain)), past the ceiling of"
                                  + " \(Self.dbtp(target.truePeakCeiling)); put a limiter in the chain (an LV2 plugin of"
                                  + " class lv2:LimiterPlugin), lower the target, or raise --true-peak-ceiling")
            }
            try copy(spool, gain: gain, to: output, progress: progress, stop: stop)
            return RenderReport.Normalization(target: target.lufs, truePeakCeiling: target.truePeakCeiling,
                                              measured: RenderReport.Loudness(measured), gainDB: gain,
                                              appliedAt: "output", limiter: nil, passes: 1)
        }

        var gain = 0.0
        var passes = 1
        var (spool, reading) = try pass(&run)
        let first = reading
        var previous: (gain: Double, lufs: Double)?
        while true {
            let now = try integrated(reading)
            let miss = target.lufs - now
            if abs(miss) <= LoudnessTarget.tolerance { break }
            guard passes < LoudnessTarget.maxPasses else {
                throw RenderError(.failed, "cannot normalize '\(name)' to \(Self.lufs(target.lufs)) through the limiter"
                                  + " '\(limiter)': after \(passes) passes it measures \(Self.lufs(now)) with"
                                  + " \(Self.db(gain)) at the chain's input (the limiter holds the loudness)")
            }
            // The secant through the last two passes (a limiter gives less than a dB for a dB), kept to a slope of
            // 0.1 to 2; the first step takes the slope as 1.
            var slope = 1.0
            if let p = previous, abs(gain - p.gain) > 1e-6 { slope = min(2, max(0.1, (now - p.lufs) / (gain - p.gain))) }
            previous = (gain, now)
            gain = min(Limits.gainDB.upperBound, max(Limits.gainDB.lowerBound, gain + miss / slope))
            let next = try again(gain)
            run.free()
            run = next
            passes += 1
            (spool, reading) = try pass(&run)
        }
        if let tp = reading.truePeak, tp > target.truePeakCeiling {
            throw RenderError(.badInput, "cannot normalize '\(name)' to \(Self.lufs(target.lufs)): through the limiter"
                              + " '\(limiter)' its true peak is \(Self.dbtp(tp)), past the ceiling of"
                              + " \(Self.dbtp(target.truePeakCeiling)); set the limiter's threshold at or below the ceiling"
                              + " (true-peak limiting where it offers it)")
        }
        try copy(spool, gain: 0, to: output, progress: progress, stop: stop)
        return RenderReport.Normalization(target: target.lufs, truePeakCeiling: target.truePeakCeiling,
                                          measured: RenderReport.Loudness(first), gainDB: gain, appliedAt: "input",
                                          limiter: limiter, passes: passes)
    }

    /// Writes the spooled frames into the output, times `gain` dB; says it is alive and looks for a stop as the
    /// cycle loop does.
    static func copy(_ spool: RenderSpool, gain: Double, to output: RenderOutput, progress: Progress?,
                     stop: (() -> Int32?)?) throws(RenderError) {
        let factor = Float(pow(10, gain / 20))
        let channels = spool.channels
        var done = 0
        var told = DispatchTime.now().uptimeNanoseconds
        try spool.readBack { (samples, frames) throws(RenderError) in
            if factor != 1 { for i in 0..<(frames * channels) { samples[i] *= factor } }
            try output.write(samples, frames: frames)
            done += frames
            let now = DispatchTime.now().uptimeNanoseconds
            if now &- told >= 100_000_000 {
                told = now
                if let signal = stop?() { throw RenderError.stopped(signal) }
                progress?(done, spool.frames)
            }
        }
        progress?(done, done)
    }

    /// The name of the first plugin of the chain that is a limiter (class lv2:LimiterPlugin) and not bypassed.
    static func limiter(in chain: PluginChain, host: PluginHost) -> String? {
        chain.currentSpecs.first { !$0.bypass && host.classes(of: $0.uri).contains(PluginHost.limiterClass) }?.name
    }

    /// The report's notes, with a line for a normalization.
    static func notes(_ given: [String], normalization n: RenderReport.Normalization?,
                      loudness: RenderReport.Loudness) -> [String]? {
        var notes = given
        if let n {
            let how = n.limiter.map { "\(Self.db(n.gainDB)) at the chain's input, into the limiter '\($0)', \(n.passes) pass(es)" }
                ?? "\(Self.db(n.gainDB)) after the chain"
            notes.append("normalized to \(Self.lufs(n.target)): measured \(Self.lufs(n.measured.integrated)), gain \(how);"
                         + " now \(Self.lufs(loudness.integrated)), true peak \(Self.dbtp(loudness.truePeak))")
        }
        return notes.isEmpty ? nil : notes
    }

    static func lufs(_ v: Double?) -> String { LoudnessReading.text(v) + " LUFS" }
    static func dbtp(_ v: Double?) -> String { (v.map { String(format: "%+.1f", $0) } ?? "-inf") + " dBTP" }
    static func db(_ v: Double) -> String { String(format: "%+.1f dB", v) }
}
