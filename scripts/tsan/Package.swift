// swift-tools-version: 6.1
// `make test-tsan`: the lock-free rings under ThreadSanitizer. A package of its own holding only the Realtime module
// and its tests (links to the main tree's folders), so the sanitized build is those few files instead of the whole
// package with Hummingbird, NIO and crypto: about 20 s of CPU instead of 6 minutes.
import PackageDescription

let package = Package(
    name: "TandemTSan",
    targets: [
        .target(name: "Realtime"),
        .testTarget(name: "RealtimeTests", dependencies: ["Realtime"]),
    ],
    swiftLanguageModes: [.v6]
)
