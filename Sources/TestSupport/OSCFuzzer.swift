import Commands
import Foundation

/// A type-aware OSC fuzzer for Tandem's control protocol (docs/CONTROL.md): every command with right and wrong
/// types, counts and values (huge, negative, NaN, infinities, 1e15, empty, huge and NUL-holding strings, paths that
/// leave the session folder, subscriptions to the session's own port), plus raw garbage, truncated, bit-flipped,
/// oversized packets and bundles. The same seed gives the same packets.
public struct OSCFuzzer {
    /// Every command of the protocol and the argument types it takes: the command model's (`CommandSpec.all`) and
    /// OSC's own subscription messages (a test checks this is the protocol's table, so a new command gets fuzzed).
    public static let commands: [String: String] = Dictionary(uniqueKeysWithValues: CommandSpec.all.map {
        ($0.address, $0.signature)
    }).merging(["/tandem/subscribe": "[s][f]", "/tandem/unsubscribe": "[s]"]) { a, _ in a }

    /// What the fuzzer knows about its target.
    public struct Target: Sendable {
        /// The session's own control port (for self-subscription).
        public var controlPort: Int
        /// File names inside the session folder (presets, audio) that remote paths may name.
        public var sessionFiles: [String]
        /// Plugin names and control symbols that exist, to reach past the lookup into the value path.
        public var plugins: [(engine: String, name: String, symbol: String)]

        public init(controlPort: Int, sessionFiles: [String] = [], plugins: [(engine: String, name: String, symbol: String)] = []) {
            self.controlPort = controlPort
            self.sessionFiles = sessionFiles
            self.plugins = plugins
        }
    }

    public var random: SeededRandom
    public let target: Target
    /// How many packets of each kind were made (for the summary).
    public private(set) var kinds: [String: Int] = [:]
    private let addresses: [String]

    public init(seed: UInt64, target: Target) {
        random = SeededRandom(seed: seed)
        self.target = target
        addresses = Self.commands.keys.sorted()
    }

    /// One generated packet and a short description of it (for a failure message).
    public struct Packet: CustomStringConvertible, Sendable {
        public var bytes: [UInt8]
        public var kind: String
        public var summary: String
        public var description: String { "\(kind): \(summary) [\(bytes.count) bytes]" }
    }

    // MARK: Values

    static let hugeNumbers: [Double] = [1e15, -1e15, 1.9e14, 2e14, 9.3e18, -9.3e18, 1e300, -1e300, 1e308, .greatestFiniteMagnitude,
                                        -.greatestFiniteMagnitude, .leastNonzeroMagnitude, -0.0, .nan, -.nan, .infinity,
                                        -.infinity, Double(Int64.max), Double(Int32.max), 4294967296, 1e-300]
    static let edgeNumbers: [Double] = [0, -1, 0.5, 1, 12.5, 24, 24.0001, -120, -120.0001, 60, 60.0001, 0.02, 0.0199,
                                        3600, 86400, -0.5, 1e9, 44100, 48000]

    mutating func number() -> Double {
        switch random.below(3) {
        case 0: return random.pick(Self.hugeNumbers)
        case 1: return random.pick(Self.edgeNumbers)
        default: return (Double(random.next() >> 11) / Double(1 << 53) - 0.5) * pow(10, Double(random.below(20)))
        }
    }

    /// A numeric argument of a random OSC number type.
    mutating func numeric() -> OSCArgument {
        let v = number()
        switch random.below(5) {
        case 0: return .float(Float(v))
        case 1: return .double(v)
        case 2: return .int(v.isFinite && abs(v) < 2.1e9 ? Int32(v) : random.pick([Int32.max, Int32.min, -1, 0]))
        case 3: return .long(v.isFinite && abs(v) < 9e18 ? Int64(v) : random.pick([Int64.max, Int64.min, -1]))
        default: return .double(v)
        }
    }

    mutating func text() -> String {
        let port = target.controlPort
        var choices = [
            "", " ", "a", "..", "../", "../../../../etc/passwd", "/etc/passwd", "/proc/self/mem", "/dev/zero", "/",
            "./", "sub/../../x.wav", "%s%s%n", "\u{0}", "a\u{0}b", "é€😀", String(repeating: "x", count: 300),
            String(repeating: "/..", count: 200), "recorder", "player", "nosuch", "gain", "2",
            "osc.udp://127.0.0.1:\(port)/", "osc.udp://localhost:\(port)/", "127.0.0.1:\(port)", "\(port)",
            "osc.udp://127.0.0.1:0/", "osc.udp://127.0.0.1:65536/", "osc.udp://10.0.0.1:9000/", "osc.tcp://127.0.0.1:9/",
            "osc.udp://127.0.0.1:9/", "osc.udp://127.255.255.255:\(port)/", ":::", "-1", "1e15", "nan",
        ]
        choices += target.sessionFiles
        choices += target.sessionFiles.map { "../" + $0 }
        choices += target.sessionFiles.map { "./" + $0 + "/" }
        switch random.below(10) {
        case 0: return String(repeating: random.pick(["a", "/", ".", "é"]), count: 1000 + random.below(7000))
        case 1:
            let n = random.below(40)
            return String(decoding: (0..<n).map { _ in UInt8(1 + random.below(255)) }, as: UTF8.self)
        default: return random.pick(choices)
        }
    }

    mutating func anyArgument() -> OSCArgument {
        switch random.below(12) {
        case 0, 1, 2: return numeric()
        case 3, 4, 5: return .string(text())
        case 6: return .symbol(text())
        case 7: return .blob((0..<random.below(64)).map { _ in UInt8(random.below(256)) })
        case 8: return .char(UInt8(random.below(256)))
        case 9: return .timetag(random.next())
        case 10: return .midi(UInt32(truncatingIfNeeded: random.next()))
        default: return random.pick([.true, .false, .nil, .infinitum])
        }
    }

    // MARK: Messages

    /// A message that follows the command's signature, with values chosen to hurt.
    mutating func wellTyped(_ address: String) -> [OSCArgument] {
        switch address {
        case "/tandem/play/seek", "/tandem/play/gain": return [numeric()]
        case "/tandem/play/load": return (0..<(1 + random.below(3))).map { _ in .string(text()) }
        case "/tandem/preset/apply": return [.string(text())]
        case "/tandem/subscribe":
            var args: [OSCArgument] = []
            if random.chance(0.7) { args.append(.string(text())) }
            if random.chance(0.5) { args.append(numeric()) }
            return args
        case "/tandem/unsubscribe": return random.chance(0.6) ? [.string(text())] : []
        case "/tandem/plugin/set", "/tandem/plugin/get":
            var names: [OSCArgument]
            if let p = target.plugins.isEmpty || random.chance(0.3) ? nil : random.pick(target.plugins) {
                names = [.string(p.engine), .string(p.name), .string(p.symbol)]
                if random.chance(0.3) { names[random.below(3)] = .string(text()) }
            } else {
                names = [.string(random.pick(["recorder", "player", text()])), .string(text()), .string(text())]
            }
            return address.hasSuffix("set") ? names + [numeric()] : names
        case "/tandem/plugin/bypass":
            let p = target.plugins.isEmpty || random.chance(0.3) ? nil : random.pick(target.plugins)
            var args: [OSCArgument] = [.string(p?.engine ?? random.pick(["recorder", "player", text()])),
                                       .string(p?.name ?? text())]
            if random.chance(0.7) { args.append(random.chance(0.5) ? .float(Float(random.below(2))) : numeric()) }
            return args
        case "/tandem/map/learn":
            let p = target.plugins.isEmpty || random.chance(0.3) ? nil : random.pick(target.plugins)
            var args: [OSCArgument] = [.string(p?.engine ?? text()), .string(p?.name ?? text()), .string(p?.symbol ?? text())]
            if random.chance(0.5) { args += [numeric(), numeric()] }
            if random.chance(0.5) { args.append(.string(random.pick(["linear", "log", "exp", text()]))) }
            return random.chance(0.1) ? [] : args
        case "/tandem/map/add":
            let p = target.plugins.isEmpty ? nil : random.pick(target.plugins)
            let engine = p?.engine ?? text(), plugin = p?.name ?? text(), symbol = p?.symbol ?? text()
            return [.string(random.pick([
                "cc \(random.below(300)) -> \(engine):\(plugin):\(symbol) \(text())..\(text())",
                "cc 1 7 -> \(engine):\(plugin):\(symbol) -1e300..nan log",
                "bend -> \(engine):\(plugin) presets", "program 17 -> file ../../etc/passwd",
                "note 60 -> mark \(text())", "program -> \(engine):\(plugin) presets \(text())", text(),
            ]))]
        case "/tandem/map/clear": return random.chance(0.5) ? [numeric()] : []
        case "/tandem/plugin/mix", "/tandem/plugin/gain":
            let e = target.plugins.isEmpty || random.chance(0.3) ? random.pick(["recorder", "player", text()])
                : random.pick(target.plugins).engine
            return random.chance(0.7) ? [.string(e), numeric()] : [.string(e)]
        default:
            // Any other command: each parameter of its spec given a value of its kind, chosen to hurt.
            guard let spec = CommandSpec.named[address] else { return [] }
            var args: [OSCArgument] = []
            for p in spec.parameters {
                if p.optional && random.chance(0.4) { break }
                let count = p.repeats ? 1 + random.below(3) : 1
                for _ in 0..<count {
                    switch p.kind {
                    case .name: args.append(.string(text()))
                    case .number, .value, .index: args.append(numeric())
                    case .flag: args.append(random.chance(0.7) ? .int(Int32(random.below(2))) : numeric())
                    }
                }
            }
            return args
        }
    }

    /// The next packet.
    public mutating func next() -> Packet {
        let address = random.pick(addresses)
        let packet: Packet
        switch random.below(100) {
        case 0..<30:
            let args = wellTyped(address)
            packet = Packet(bytes: OSCWire.message(address, args), kind: "typed", summary: Self.show(address, args))
        case 30..<50:
            // Wrong types and counts: any arguments, any number of them.
            let args = (0..<random.pick([0, 1, 1, 2, 3, 4, 5, 9])).map { _ in anyArgument() }
            packet = Packet(bytes: OSCWire.message(address, args), kind: "types", summary: Self.show(address, args))
        case 50..<56:
            let own = target.controlPort
            let url = random.pick(["osc.udp://127.0.0.1:\(own)/", "osc.udp://localhost:\(own)/", "127.0.0.1:\(own)", "\(own)"])
            let args: [OSCArgument] = random.chance(0.5) ? [.string(url)] : [.string(url), .double(random.pick([0.02, 0.1, 60]))]
            let a = random.chance(0.8) ? "/tandem/subscribe" : "/tandem/unsubscribe"
            packet = Packet(bytes: OSCWire.message(a, args), kind: "self-subscribe", summary: Self.show(a, args))
        case 56..<64:
            let a = mutatedAddress(address)
            let args = random.chance(0.5) ? wellTyped(address) : []
            packet = Packet(bytes: OSCWire.message(a, args), kind: "address", summary: Self.show(a, args))
        case 64..<72:
            let n = random.pick([0, 1, 2, 3, 4, 5, 7, 8, 16, 64, 200, 1000])
            let bytes = (0..<n).map { _ in UInt8(random.below(256)) }
            packet = Packet(bytes: bytes, kind: "garbage", summary: "\(n) random bytes")
        case 72..<80:
            let args = wellTyped(address)
            var bytes = OSCWire.message(address, args)
            let cut = random.below(bytes.count)
            bytes.removeLast(bytes.count - cut)
            packet = Packet(bytes: bytes, kind: "truncated", summary: Self.show(address, args) + " cut at \(cut)")
        case 80..<86:
            let args = wellTyped(address)
            var bytes = OSCWire.message(address, args)
            for _ in 0...random.below(4) where !bytes.isEmpty {
                bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
            }
            packet = Packet(bytes: bytes, kind: "bitflip", summary: Self.show(address, args) + " with bits flipped")
        case 86..<90:
            // Tags that disagree with the data that follows.
            let args = wellTyped(address)
            let tags = random.pick([",", "", "ffff", ",s", ",fffffffff", ",b", ",i", ",x", ",[ff]", ",ss" + String(repeating: "s", count: 50)])
            packet = Packet(bytes: OSCWire.message(address, args, tags: tags), kind: "tags",
                            summary: Self.show(address, args) + " tags '\(tags)'")
        case 90..<95:
            // Over the 8192-byte limit (up to a large UDP datagram).
            let size = random.pick([8189, 8192, 8193, 8200, 16_384, 60_000])
            let args: [OSCArgument] = [.string(String(repeating: "z", count: size))]
            packet = Packet(bytes: OSCWire.message(address, args), kind: "oversized", summary: "\(address) with a \(size)-byte string")
        default:
            var bytes = OSCWire.padded(Array("#bundle".utf8)) + OSCWire.bigEndian(UInt64(1))
            let inner = OSCWire.message(address, wellTyped(address))
            bytes += OSCWire.bigEndian(Int32(random.chance(0.8) ? inner.count : random.pick([-1, 0, 1 << 30]))) + inner
            packet = Packet(bytes: bytes, kind: "bundle", summary: "bundle of \(address)")
        }
        kinds[packet.kind, default: 0] += 1
        return packet
    }

    mutating func mutatedAddress(_ address: String) -> String {
        switch random.below(9) {
        case 0: return address + "/"
        case 1: return address.uppercased()
        case 2: return "/" + address
        case 3: return String(address.dropLast(random.below(address.count)))
        case 4: return address.replacingOccurrences(of: "tandem", with: "*")
        case 5: return "/tandem/{play,record}/" + random.pick(["stop", "start", "seek"])
        case 6: return address + String(repeating: "/x", count: random.below(2000))
        case 7: return "tandem" + address
        default:
            var chars = Array(address.utf8)
            chars[random.below(chars.count)] = UInt8(1 + random.below(255))
            return String(decoding: chars, as: UTF8.self)
        }
    }

    static func show(_ address: String, _ args: [OSCArgument]) -> String {
        let a = address.count > 80 ? "\(address.prefix(60))… (\(address.utf8.count) bytes)" : address
        return ([a] + args.map(\.description)).joined(separator: " ")
    }
}
