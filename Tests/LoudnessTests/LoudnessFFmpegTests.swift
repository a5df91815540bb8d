import Foundation
import Testing
import TestSupport

/// `tandem loudness` against an independent implementation: ffmpeg's `ebur128` filter, over ten files made here
/// with sox (music, speech, noise, silence-padded, mono, 5.1, 44.1 kHz, intersample peaks). Integrated loudness and
/// loudness range within 0.1 LU, true peak within 0.2 dB.
///
/// The noise is band-limited to 16 kHz: above that the two true-peak interpolators part by design. BS.1770-4
/// Annex 2's 48-tap filter (ours) rolls off towards Nyquist while ffmpeg upsamples to 192 kHz with libswresample's
/// filter, so sox's full-band white noise (uniform, peak -20 dBFS) reads -14.97 dBTP here and -14.38 in ffmpeg
/// (sox's 8x very-high-quality upsampler: -12.46). A sine's start is faded in, as the EBU's files are: an abrupt
/// start overshoots in every interpolator, by their own amounts.
///
/// The loudness range: ours is Tech 3342's rule (and libebur128's) over our short-term values; ffmpeg's reported
/// LRA can differ from that rule over its own short-term values (`LoudnessTools.FFmpeg.rangeOfShortTerm`) by more
/// than 0.1 LU on speech-like bursts of uneven lengths, so `unevenSpeechRangeIsTech3342OverFFmpegsShortTerm` holds
/// ours to that rule over ffmpeg's short-term values instead, and prints ffmpeg's reported figure beside it.
@Suite(.serialized) struct LoudnessFFmpegTests {
    @Test(.enabled(if: LoudnessTools.available))
    func tenFilesMeasureAsFFmpegMeasuresThem() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-ffmpeg")
        defer { try? FileManager.default.removeItem(at: dir) }
        func f(_ name: String) -> String { dir.appendingPathComponent(name).path }
        let sox = LoudnessTools.sox

        // Music: two six-note chords with harmonics, tremolo and a fade each, 6 s apiece, 12 dB apart, alternating.
        try sox(["-n", "-r", "48000", "-c", "2", "-b", "24", f("chordA.wav"), "synth", "6",
                 "sine", "220", "sine", "277.18", "sine", "329.63", "sine", "440", "sine", "660", "sine", "880",
                 "remix", "1,2,3,4v0.5,5v0.3,6v0.2", "1v0.8,2,3,4v0.5,5v0.3,6v0.2",
                 "tremolo", "2", "40", "fade", "q", "0.05", "6", "1", "gain", "-n", "-12"])
        try sox(["-n", "-r", "48000", "-c", "2", "-b", "24", f("chordB.wav"), "synth", "6",
                 "sine", "196", "sine", "246.94", "sine", "293.66", "sine", "392", "sine", "587.3", "sine", "784",
                 "remix", "1,2,3,4v0.5,5v0.3,6v0.2", "1,2v0.7,3,4v0.5,5v0.3,6v0.2",
                 "tremolo", "3", "50", "fade", "q", "0.05", "6", "1", "gain", "-n", "-24"])
        try sox([f("chordA.wav"), f("chordB.wav"), f("chordA.wav"), f("chordB.wav"), f("music.wav")])
        // Speech: band-passed pink noise bursts at a syllable rate, 1.6 s with 0.8 s pauses, a slow swell over them.
        try sox(["-n", "-r", "48000", "-c", "1", "-b", "24", f("burst.wav"), "synth", "1.6", "pinknoise",
                 "bandpass", "700", "1.2q", "tremolo", "4.5", "85", "fade", "q", "0.05", "1.6", "0.1",
                 "gain", "-n", "-18", "pad", "0", "0.8"])
        try sox([f("burst.wav"), f("speech1.wav"), "repeat", "11"])
        try sox([f("speech1.wav"), f("speech.wav"), "remix", "1", "1", "tremolo", "0.1", "40"])
        try sox(["-n", "-r", "48000", "-c", "2", "-b", "24", f("white.wav"), "synth", "20", "whitenoise", "vol", "0.5",
                 "sinc", "-16k", "gain", "-n", "-20"])
        try sox(["-n", "-r", "48000", "-c", "2", "-b", "24", f("pink.wav"), "synth", "20", "pinknoise", "vol", "0.5",
                 "sinc", "-16k", "gain", "-n", "-16"])
        try sox([f("music.wav"), f("padded.wav"), "pad", "6", "6"])
        try sox([f("music.wav"), f("mono.wav"), "remix", "1"])
        // 5.1 in WAV's order L R C LFE Ls Rs (the LFE is not counted; the surrounds weigh 1.41).
        try sox([f("music.wav"), f("surround.wav"), "remix", "1", "2", "1v0.5,2v0.5", "1v0.7", "1v0.4", "2v0.4"])
        try sox([f("music.wav"), f("music44.wav"), "rate", "-v", "44100"])
        // A 12 kHz sine, 45 degrees off its samples: they peak at -3.1 dBFS, the wave at -0.1 dBTP.
        try sox(["-n", "-r", "48000", "-c", "2", "-e", "floating-point", "-b", "32", f("peaks.wav"), "synth", "20",
                 "sine", "12000", "0", "12.5", "fade", "h", "0.01", "gain", "-0.1"])

        let names = ["music.wav", "speech.wav", "white.wav", "pink.wav", "padded.wav", "mono.wav", "surround.wav",
                     "music44.wav", "peaks.wav"]
        // The tenth: the music and the speech together, the speech 20 dB down and late (a wide loudness range).
        try sox([f("speech.wav"), f("quiet.wav"), "gain", "-20"])
        try sox([f("music.wav"), f("quiet.wav"), f("mixed.wav")])
        let files = (names + ["mixed.wav"]).map(f)

        let ours = try LoudnessTools.measure(files)
        try #require(ours.count == files.count)
        var table = ["file           I ours  I ffmpeg   LRA ours  LRA ffmpeg   TP ours  TP ffmpeg"]
        var failures: [String] = []
        for (file, o) in zip(files, ours) {
            let theirs = try LoudnessTools.ffmpeg(file, scratch: dir)
            let i = try #require(o["integrated"] as? Double, "\(file): \(o)")
            let lra = try #require(o["range"] as? Double, "\(file): \(o)")
            let tp = try #require(o["truePeak"] as? Double, "\(file): \(o)")
            let name = (file as NSString).lastPathComponent
            table.append(String(format: "%-13@ %7.3f  %7.3f   %7.3f   %7.3f    %7.3f   %7.3f", name as NSString, i,
                                theirs.integrated, lra, theirs.range, tp, theirs.truePeak))
            if abs(i - theirs.integrated) > 0.1 { failures.append("\(name): integrated \(i) vs ffmpeg \(theirs.integrated)") }
            if abs(lra - theirs.range) > 0.1 { failures.append("\(name): range \(lra) vs ffmpeg \(theirs.range)") }
            if abs(tp - theirs.truePeak) > 0.2 { failures.append("\(name): true peak \(tp) vs ffmpeg \(theirs.truePeak)") }
        }
        print(table.joined(separator: "\n"))
        #expect(failures.isEmpty, "\(failures)\n\(table.joined(separator: "\n"))")
        for (file, o) in zip(files, ours) {
            let theirs = try LoudnessTools.ffmpeg(file, scratch: dir)
            if let lra = o["range"] as? Double, let rule = theirs.rangeOfShortTerm {
                #expect(abs(lra - rule) <= 0.05, "\(file): range \(lra), Tech 3342 over ffmpeg's short-term values \(rule)")
            }
        }
        // What the files are said to be: mono, 5.1 and 44.1 kHz measured as such.
        #expect(ours[5]["channels"] as? Int == 1 && ours[6]["channels"] as? Int == 6 && ours[7]["rate"] as? Int == 44100)
    }

    /// Speech-like bursts of three lengths and levels in an uneven order: the integrated loudness and true peak as
    /// ffmpeg has them, and the range as Tech 3342 has it over ffmpeg's own short-term values.
    @Test(.enabled(if: LoudnessTools.available))
    func unevenSpeechRangeIsTech3342OverFFmpegsShortTerm() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-speech")
        defer { try? FileManager.default.removeItem(at: dir) }
        func f(_ name: String) -> String { dir.appendingPathComponent(name).path }
        let bursts: [(String, String, String, String, String, String)] = [
            ("b1.wav", "1.3", "700", "1.2q", "-18", "0.5"), ("b2.wav", "0.9", "900", "1.5q", "-22", "0.9"),
            ("b3.wav", "2.1", "600", "1q", "-16", "0.4"),
        ]
        for (name, length, centre, width, level, pause) in bursts {
            try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "24", f(name), "synth", length, "pinknoise",
                                   "bandpass", centre, width, "tremolo", "4.5", "85", "fade", "q", "0.05", length, "0.1",
                                   "gain", "-n", level, "pad", "0", pause])
        }
        let order = [1, 2, 3, 2, 1, 3, 3, 2, 1, 1, 2, 3, 2, 1].map { f("b\($0).wav") }
        try LoudnessTools.sox(order + [f("group.wav")])
        try LoudnessTools.sox([f("group.wav"), f("speech.wav"), "remix", "1", "1", "tremolo", "0.13", "40"])
        let ours = try #require(try LoudnessTools.measure([f("speech.wav")]).first)
        let theirs = try LoudnessTools.ffmpeg(f("speech.wav"), scratch: dir)
        let i = try #require(ours["integrated"] as? Double), lra = try #require(ours["range"] as? Double)
        let tp = try #require(ours["truePeak"] as? Double), rule = try #require(theirs.rangeOfShortTerm)
        print(String(format: "uneven speech: I %.3f (ffmpeg %.3f), LRA %.3f (Tech 3342 over ffmpeg's S: %.3f; ffmpeg"
                     + " reports %.3f), TP %.3f (ffmpeg %.3f)", i, theirs.integrated, lra, rule, theirs.range, tp,
                     theirs.truePeak))
        #expect(abs(i - theirs.integrated) <= 0.1 && abs(tp - theirs.truePeak) <= 0.2)
        #expect(abs(lra - rule) <= 0.05)
    }

    /// The formats the player reads besides WAV (FLAC, Ogg Vorbis, MP3 through libsndfile), at 44.1 kHz: measured as
    /// ffmpeg decodes and measures them, and the FLAC as its WAV to the bit.
    @Test(.enabled(if: LoudnessTools.available))
    func otherFormatsMeasureAsFFmpegMeasuresThem() throws {
        let dir = TestEnvironment.temporaryDirectory("loudness-formats")
        defer { try? FileManager.default.removeItem(at: dir) }
        func f(_ name: String) -> String { dir.appendingPathComponent(name).path }
        try LoudnessTools.sox(["-n", "-r", "44100", "-c", "2", "-b", "24", f("tone.wav"), "synth", "12",
                               "sine", "330", "sine", "495", "sine", "660", "remix", "1,2v0.6", "2,3v0.6",
                               "tremolo", "0.5", "60", "gain", "-n", "-10"])
        for ext in ["flac", "ogg", "mp3"] { try LoudnessTools.sox([f("tone.wav"), f("tone.\(ext)")]) }
        let files = ["tone.wav", "tone.flac", "tone.ogg", "tone.mp3"].map(f)
        let ours = try LoudnessTools.measure(files)
        try #require(ours.count == 4)
        for (file, o) in zip(files, ours) {
            let theirs = try LoudnessTools.ffmpeg(file, scratch: dir)
            let i = try #require(o["integrated"] as? Double), lra = try #require(o["range"] as? Double)
            let tp = try #require(o["truePeak"] as? Double)
            print(String(format: "%@: I %.3f (ffmpeg %.3f), LRA %.2f (%.2f), TP %.3f (%.3f), rate %@", file, i,
                         theirs.integrated, lra, theirs.range, tp, theirs.truePeak, "\(o["rate"] ?? "?")"))
            #expect(abs(i - theirs.integrated) <= 0.1 && abs(lra - theirs.range) <= 0.1 && abs(tp - theirs.truePeak) <= 0.2,
                    "\(file)")
            #expect(o["rate"] as? Int == 44100)
        }
        #expect(ours[0]["integrated"] as? Double == ours[1]["integrated"] as? Double, "FLAC is lossless")
    }
}
