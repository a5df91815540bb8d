import ArgumentParser
import Engine
import Foundation
import Takes

struct StitchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stitch",
        abstract: "Join a rotated take's chunks back into one file (per channel for stems), sample for sample.")

    @Argument(help: "The take's report (the .json sidecar beside its files).")
    var report: String

    @Option(name: [.short, .long], help: "Output file (default: the take's name with -stitched). Never overwritten.")
    var output: String?

    func run() throws {
        do {
            for path in try Stitcher.stitch(reportPath: report, output: output) { say(path) }
        } catch {
            fail(.badInput, "\(error)")
        }
    }
}
