// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Tandem",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tandem", targets: ["tandem"]),
        // LD_PRELOAD interposer that proves the process callbacks real-time safe (test support).
        .library(name: "RTCheck", type: .dynamic, targets: ["RTCheck"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The Prometheus text format of the metrics endpoint (its own deps: swift-atomics, swift-metrics' CoreMetrics).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The HTTP and WebSocket API (docs/HTTP.md) and the page it serves.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // Hummingbird's own foundations, named for the server's limits (a channel handler, HTTP parts).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // SHA-256 of a render's inputs and output (built already: swift-nio-extras depends on it).
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .systemLibrary(name: "CJack", pkgConfig: "jack",
                       providers: [.apt(["libjack-jackd2-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile",
                       providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr",
                       providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CLo", pkgConfig: "liblo",
                       providers: [.apt(["liblo-dev"])]),
        .systemLibrary(name: "CLilv", pkgConfig: "lilv-0",
                       providers: [.apt(["liblilv-dev", "lv2-dev"])]),
        // The LV2 host features that must be C (URID map, variadic log, worker queues).
        .target(name: "LV2Host"),
        // LADSPA and DSSI plugins behind an LV2-shaped instance (Debian's ladspa-sdk, dssi-dev: their headers only).
        .target(name: "LADSPAHost", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("m")]),

        .target(name: "Realtime"),
        // ITU-R BS.1770 loudness: the per-sample work in C (optimised in every build: a debug build measures an hour
        // of audio in seconds), the meter in Swift. docs/LOUDNESS.md.
        .target(name: "LoudnessDSP", cSettings: [.unsafeFlags(["-O2"])]),
        .target(name: "Loudness", dependencies: ["LoudnessDSP"]),
        .target(name: "Jack", dependencies: [
            "CJack", "Realtime",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "SoundFile", dependencies: ["CSndFile", "CSoxr"]),
        // Standard MIDI Files: reader (format 0 and 1, tempo map) and the recorder's crash-safe writer. Pure Swift.
        .target(name: "MIDIFile"),
        .target(name: "Presets", dependencies: ["SoundFile", "Realtime"]),
        // The one model of commands under every surface (OSC, ctl, control maps, HTTP): names, arguments, ranges,
        // help, parsing. Pure.
        .target(name: "Commands", dependencies: ["Presets"]),
        .target(name: "Plugins", dependencies: [
            "CLilv", "LV2Host", "LADSPAHost", "Realtime", "Presets",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Offline rendering: a chain over files, cycle by cycle, with the engines' own RT code and no JACK (docs/RENDER.md).
        .target(name: "Render", dependencies: [
            "Plugins", "Presets", "SoundFile", "MIDIFile", "Commands", "Realtime", "Loudness",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The take pipeline: files, reports, chunks, markers, retention, the level trigger, recovery. Never JACK.
        .target(name: "Takes", dependencies: [
            "Realtime", "SoundFile", "Presets", "MIDIFile", "Commands", "Loudness",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "Engine", dependencies: [
            "Realtime", "Jack", "SoundFile", "Presets", "Plugins", "MIDIFile", "Commands", "Takes", "Loudness",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The session coordinator and its policies: one owner of the engines, applying presets by plan, every command
        // carried out in one place (Session.execute).
        .target(name: "Coordinator", dependencies: [
            "Engine", "Takes", "Jack", "Realtime", "SoundFile", "Presets", "Plugins", "MIDIFile", "Commands", "Loudness",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "Control", dependencies: [
            "CLo", "Engine", "Coordinator", "Takes", "Presets", "Plugins", "Commands", "Realtime", "Loudness",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        // The HTTP and WebSocket API and the web page: requests become commands of the command model, carried out
        // on the session's thread (see `SessionGateway`).
        .target(name: "WebAPI", dependencies: [
            "Engine", "Coordinator", "Commands", "Control", "Presets", "Plugins", "Realtime", "Takes", "Loudness",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
        ], resources: [.copy("Resources")]),
        .executableTarget(name: "tandem", dependencies: [
            "Engine", "Coordinator", "Control", "Jack", "SoundFile", "Presets", "Realtime", "Plugins", "Commands", "WebAPI", "Render", "Takes", "Loudness",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Test support: the interposer, a probe with a deliberately bad callback, and shared fixtures.
        .target(name: "RTCheck"),
        .executableTarget(name: "rtcheck-probe", dependencies: ["Jack", "Realtime"]),
        .target(name: "TestSupport", dependencies: ["Jack", "Realtime", "SoundFile", "Commands"]),
        // An NSM server written from the published API, for tests of Tandem as an NSM client.
        .target(name: "NSMServerFixture", dependencies: ["Control"]),

        .testTarget(name: "RealtimeTests", dependencies: ["Realtime"]),
        .testTarget(name: "LoudnessTests", dependencies: ["Loudness", "SoundFile", "TestSupport"]),
        .testTarget(name: "CommandsTests", dependencies: ["Commands", "Presets"]),
        .testTarget(name: "WebAPITests", dependencies: ["Takes", "WebAPI", "Coordinator", "Engine", "Presets", "Commands", "Realtime", "TestSupport",
                                                      .product(name: "HTTPTypes", package: "swift-http-types")]),
        .testTarget(name: "JackTests", dependencies: ["Jack", "Realtime", "TestSupport"]),
        .testTarget(name: "SoundFileTests", dependencies: ["SoundFile", "TestSupport"]),
        .testTarget(name: "MIDIFileTests", dependencies: ["MIDIFile", "TestSupport"]),
        .testTarget(name: "PresetsTests", dependencies: ["Presets", "TestSupport"]),
        .testTarget(name: "EngineTests", dependencies: ["Takes", "Engine", "Coordinator", "Jack", "Presets", "TestSupport"]),
        .testTarget(name: "PluginsTests", dependencies: ["Plugins", "Presets", "TestSupport",
                                                        .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "TandemTests", dependencies: ["Takes", "TestSupport", "SoundFile", "Engine", "Coordinator", "Jack", "Control", "Plugins",
                                                       "NSMServerFixture", "Commands", "Render", "Loudness"]),
        .testTarget(name: "RenderTests", dependencies: ["Render", "Plugins", "Presets", "Commands", "SoundFile",
                                                       "TestSupport"]),
        .testTarget(name: "ControlTests", dependencies: ["Takes", "Control", "Engine", "Coordinator", "Presets", "TestSupport", "Commands"]),
    ],
    swiftLanguageModes: [.v6]
)
