import Foundation
import Logging
import Plugins
import Presets
import Testing
import TestSupport

/// buf-size:fixedBlockLength and powerOf2BlockLength, proved with Tandem's test plugin (Tests/Fixtures/lv2), which
/// refuses to instantiate without the fixed-block promise and counts every run() of another length.
@Suite(.serialized) struct BlockLengthTests {
    static let ready: Bool = {
        guard TestPlugins.canBuild, let b = try? TestPlugins.bundle() else { return false }
        return PluginHost.shared.load(bundle: b)
    }()

    static func outputs(_ chain: PluginChain) -> [String: Float] {
        Dictionary(uniqueKeysWithValues: (chain.status.first?.outputs ?? []).map { ($0.symbol, $0.value) })
    }

    static func run(_ chain: PluginChain, cycles: Int, frames: Int, value: Float = 0.25) -> [Float] {
        let input = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        defer {
            input.deallocate()
            output.deallocate()
        }
        var out: [Float] = []
        for k in 0..<cycles {
            input.initialize(repeating: value + Float(k) * 1e-3, count: frames)
            var ins = [input], outs = [output]
            ChainState.run(chain.state.pointee, inputs: &ins, outputs: &outs, frames: frames)
            out += UnsafeBufferPointer(start: output, count: frames)
        }
        return out
    }

    @Test(.enabled(if: ready))
    func aFixedBlockPluginSeesOnlyItsBlockAcrossAPeriodChange() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: TestPlugins.fixedBlock, name: "fixed")], channels: 1,
                                sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "the plugin requires the fixed-block promise: \(chain.problems)")
        _ = Self.run(chain, cycles: 100, frames: 256)
        var o = Self.outputs(chain)
        #expect(o["mismatches"] == 0 && o["block"] == 256 && o["pow2"] == 1, "\(o)")
        // The period changes to 128 before the chain is rebuilt: the plugin is passed over (its input goes through
        // dry), never run with 128.
        let passed = Self.run(chain, cycles: 10, frames: 128)
        o = Self.outputs(chain)
        #expect(o["mismatches"] == 0, "\(o)")
        #expect(chain.blockMismatches == 10)
        #expect(passed.first == 0.25 && passed.last == 0.25 + 9e-3)
        #expect(chain.needsRebuild(forPeriod: 128) && !chain.needsRebuild(forPeriod: 256))
        // Rebuilt off the process thread (here: the test's) for 128.
        let holder = ChainHolder()
        holder.install(chain)
        #expect(holder.periodChanged(to: 128, isRunning: { false }, logger: Logger(label: "test")))
        let again = try #require(holder.chain)
        #expect(again !== chain && again.period == 128 && again.problems.isEmpty)
        _ = Self.run(again, cycles: 50, frames: 128)
        o = Self.outputs(again)
        #expect(o["mismatches"] == 0 && o["block"] == 128 && again.blockMismatches == 0, "\(o)")
        print("measured: fixedblock 100 cycles of 256, 10 of 128 passed over, rebuilt, 50 of 128: mismatches \(o["mismatches"] ?? -1)")
    }

    @Test(.enabled(if: ready))
    func noPromiseNoPluginAndNoPowerOfTwoForOddPeriods() throws {
        let refused = PluginChain(specs: [PluginSpec(uri: TestPlugins.fixedBlock)], channels: 1, sampleRate: 48000,
                                  period: 256, label: "test", fixedBlock: false)
        let e = try #require(refused.problems.first)
        #expect(refused.isEmpty && e.code == .missingFeature && e.description.contains("fixed block length"), "\(e)")
        let odd = PluginChain(specs: [PluginSpec(uri: TestPlugins.fixedBlock)], channels: 1, sampleRate: 48000,
                              period: 96, label: "test")
        #expect(odd.problems.isEmpty)
        _ = Self.run(odd, cycles: 5, frames: 96)
        let o = Self.outputs(odd)
        #expect(o["pow2"] == 0 && o["block"] == 96 && o["mismatches"] == 0, "\(o)")
    }

    /// The crash plugin passes audio while `mode` is 0 (it is crashed for real by the isolation tests, in a child).
    @Test(.enabled(if: ready))
    func theCrashPluginIsHarmlessUntilTold() throws {
        let chain = PluginChain(specs: [PluginSpec(uri: TestPlugins.crash)], channels: 2, sampleRate: 48000,
                                period: 64, label: "test")
        #expect(chain.problems.isEmpty && chain.status.first?.instances == 2, "\(chain.problems)")
        #expect(try chain.value("crash", "mode") == 0)
    }

    /// A plugin that gives no instance is told apart by why: its library cannot be loaded (the loader's words), it
    /// holds no such plugin, or its instantiate refused (it used to be "the plugin's library refused" for all three).
    @Test(.enabled(if: ready))
    func anInstantiateFailureSaysWhy() {
        let problem = { (uri: String) -> String in
            let chain = PluginChain(specs: [PluginSpec(uri: uri)], channels: 1, sampleRate: 48000, period: 256, label: "t")
            return chain.problems.first?.message ?? "no problem"
        }
        let broken = problem(TestPlugins.broken)
        #expect(broken.contains("tandem-broken.so cannot be loaded") && broken.contains("undefined symbol: tandem_test_nowhere"),
                "\(broken)")
        let absent = problem(TestPlugins.absent)
        #expect(absent.contains("tandem-test.so holds no plugin <\(TestPlugins.absent)>"), "\(absent)")
        // fixedblock refuses without the fixed-block promise (its instantiate returns nothing).
        let chain = PluginChain(specs: [PluginSpec(uri: TestPlugins.fixedBlock)], channels: 1, sampleRate: 48000, period: 256,
                                label: "t", fixedBlock: false)
        let refused = chain.problems.first?.message ?? ""
        #expect(refused.contains("instantiate refused") || refused.contains("fixed block"), "\(refused)")
    }
}

/// Per-plugin timing (status, HTTP, OSC, metrics read it): each stage's cycles are timed where they run, so the one
/// plugin that costs shows as the heaviest, and cycles over a share of the period are counted.
@Suite(.serialized) struct StageTimingTests {
    @Test(.enabled(if: BlockLengthTests.ready))
    func aHeavyPluginShowsAsTheHeaviest() throws {
        let specs = [PluginSpec(uri: TestPlugins.crash, name: "light"),
                     PluginSpec(uri: TestPlugins.heavy, name: "heavy", controls: [.init(symbol: "micros", value: 300)]),
                     PluginSpec(uri: TestPlugins.crash, name: "light2")]
        let chain = PluginChain(specs: specs, channels: 1, sampleRate: 48000, period: 256, label: "test")
        #expect(chain.problems.isEmpty, "\(chain.problems)")
        _ = BlockLengthTests.run(chain, cycles: 50, frames: 256)
        let timings = chain.status.map { ($0.name, $0.timing) }
        let heavy = try #require(timings.first { $0.0 == "heavy" }?.1)
        print("measured: per-plugin mean/max µs: " + timings.map { n, t in
            "\(n) \(String(format: "%.1f/%.1f", t?.meanMicros ?? -1, t?.maxMicros ?? -1))" }.joined(separator: ", "))
        #expect(heavy.cycles == 50)
        #expect(heavy.meanMicros >= 300 && heavy.maxMicros >= heavy.meanMicros, "\(heavy)")
        for (name, t) in timings where name != "heavy" {
            #expect((t?.meanMicros ?? .infinity) < heavy.meanMicros / 10, "\(name): \(String(describing: t))")
        }
        // 300 µs of a 5,333 µs period is under a quarter: none over. 2 ms is over, every cycle.
        #expect(heavy.overBudget == 0)
        try chain.set("heavy", "micros", 2000)
        _ = BlockLengthTests.run(chain, cycles: 5, frames: 256)
        let after = try #require(chain.status.first { $0.name == "heavy" }?.timing)
        #expect(after.overBudget == 5 && after.cycles == 55, "\(after)")
        #expect(after.budgetShare == StageTiming.budgetShare)
    }
}
