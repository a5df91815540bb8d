import Commands
import Foundation
import Presets

/// What a render reads of a take's report (the recorder's sidecar, `<take>.json`; its writer is `TakeReport` in
/// Engine, which a render does not link): the files, the channels, the chain it was recorded through, the playback
/// it was recorded beside, and its control log. Unknown keys are ignored, so a report of a later version still reads.
public struct TakeSidecar: Decodable, Sendable {
    public struct Chunk: Decodable, Sendable {
        public var files: [String]
        public var frames: Int
    }
    public struct Playback: Decodable, Sendable {
        public var files: [String]
        public var startItem: Int?
        public var startFrame: Int?
    }
    public var session: String
    public var take: Int
    public var sampleRate: Int
    public var channels: Int
    public var format: String
    public var sampleFormat: String
    public var stems: Bool
    public var chunks: [Chunk]
    public var frames: Int
    /// With the dry input recorded: the processed channels' names, then `PORT-dry` for each.
    public var channelNames: [String]?
    public var plugins: [PluginSpec]?
    public var playback: Playback?
    public var controlLog: ControlLog?
    public var ended: String

    public static func read(_ path: String) throws(RenderError) -> TakeSidecar {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RenderError(.badInput, "cannot read the take report '\(path)'"
                              + (FileManager.default.fileExists(atPath: path) ? "" : ": no such file"))
        }
        do {
            return try JSONDecoder().decode(TakeSidecar.self, from: data)
        } catch {
            throw RenderError(.badInput, "'\(path)' is not a take report Tandem can read: \(error)")
        }
    }

    /// The take's dry channels (from 0), when it has them.
    public var dryChannels: [Int]? {
        guard let names = channelNames, names.count == channels, channels % 2 == 0,
              names.suffix(channels / 2).allSatisfy({ $0.hasSuffix("-dry") }) else { return nil }
        return Array((channels / 2)..<channels)
    }

    /// The format its files were written in.
    public var audioFormat: AudioFormatName {
        AudioFormatName(container: format, sample: sampleFormat)
    }

    public struct AudioFormatName: Sendable {
        public var container: String
        public var sample: String
    }
}
