import Foundation

/// How long a soak-like test runs: short in `make test`, its full size in `make soak` (which sets `TANDEM_SOAK=1`).
/// A test reads its duration or count here, so the same code proves the same thing at either size.
public enum SoakSize {
    /// True when the environment asks for full-size soak tests (`TANDEM_SOAK=1`).
    public static var isSoak: Bool { ProcessInfo.processInfo.environment["TANDEM_SOAK"] == "1" }

    /// `test` in an ordinary run, `soak` under `TANDEM_SOAK=1`.
    public static func pick<T>(test: T, soak: T) -> T { isSoak ? soak : test }
}
