/// Which of an engine's channels are measured together as one programme (ITU-R BS.1770): "1-2" is a stereo pair,
/// "3" a mono channel, "1-6" a 5.1 programme (L R C LFE Ls Rs). Channel numbers count from 1; a group is a run of
/// neighbouring channels of 1, 2, 5 or 6 (the layouts the standard weighs). `[recorder] loudness_groups`,
/// `record --loudness-groups`.
public struct LoudnessGroups: Sendable, Equatable {
    /// Each group's channels, from 0.
    public var groups: [Range<Int>]

    public init(_ groups: [Range<Int>]) { self.groups = groups }

    /// The channel counts a programme may have.
    public static let sizes: Set<Int> = [1, 2, 5, 6]

    /// Stereo pairs (1-2, 3-4, ...), a last odd channel alone; one channel is mono.
    public static func pairs(channels: Int) -> LoudnessGroups {
        LoudnessGroups(stride(from: 0, to: max(0, channels), by: 2).map { $0..<min($0 + 2, channels) })
    }

    /// All of `channels` as one programme where the standard weighs that many (1, 2, 5, 6), else pairs: a player's or
    /// a rack's outputs.
    public static func programme(channels: Int) -> LoudnessGroups {
        sizes.contains(channels) ? LoudnessGroups([0..<channels]) : pairs(channels: channels)
    }

    /// Groups as written ("1-2", "3"), or the problem with them in words, for an engine of `channels` channels.
    public static func parse(_ texts: [String], channels: Int) -> Result<LoudnessGroups, GroupProblem> {
        var groups: [Range<Int>] = []
        for text in texts {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard (1...2).contains(parts.count), let first = Int(parts[0]), let last = Int(parts[parts.count - 1]),
                  first >= 1, last >= first else {
                return .failure(GroupProblem("'\(text)' is not a channel or a run of channels like \"1-2\""))
            }
            guard last <= channels else {
                return .failure(GroupProblem("'\(text)' names channel \(last); there are \(channels)"))
            }
            let range = (first - 1)..<last
            guard sizes.contains(range.count) else {
                return .failure(GroupProblem("'\(text)' is \(range.count) channels: a programme is 1 (mono), 2 (stereo), "
                                             + "5 (L R C Ls Rs) or 6 (5.1: L R C LFE Ls Rs) channels"))
            }
            if groups.contains(where: { $0.overlaps(range) }) {
                return .failure(GroupProblem("'\(text)' overlaps another group"))
            }
            groups.append(range)
        }
        if groups.isEmpty { return .failure(GroupProblem("no groups: leave the key out for stereo pairs")) }
        return .success(LoudnessGroups(groups))
    }

    /// The groups as `parse` reads them.
    public var texts: [String] {
        groups.map { $0.count == 1 ? "\($0.lowerBound + 1)" : "\($0.lowerBound + 1)-\($0.upperBound)" }
    }

    public struct GroupProblem: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ text: String) { description = text }
    }
}

import Foundation
