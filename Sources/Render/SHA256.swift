import Crypto
import Foundation

/// SHA-256 for the checksums a render's report gives of its source files and its output, over swift-crypto (BoringSSL
/// on Linux, with the CPU's SHA instructions where it has them). A hand-written digest took two thirds of a
/// 16-channel render's time (its inputs and output hashed at about 150 MB/s); this one runs at the disk's speed.
///
/// Threads: a value; one owner.
public struct SHA256 {
    private var digest = Crypto.SHA256()

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) { digest.update(bufferPointer: bytes) }

    public mutating func update(_ data: [UInt8]) { data.withUnsafeBytes { update($0) } }

    /// The digest as 64 lowercase hexadecimal digits.
    public mutating func hex() -> String {
        digest.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The digest of a whole file, read in 1 MiB pieces; nil when it cannot be read.
    public static func file(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var digest = SHA256()
        while true {
            guard let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty else { break }
            data.withUnsafeBytes { digest.update($0) }
        }
        return digest.hex()
    }
}
