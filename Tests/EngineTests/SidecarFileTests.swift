@testable import Takes
import Testing
import Foundation
@testable import Engine
import TestSupport

/// The take report's in-place rewrite, without a server.
@Suite struct SidecarFileTests {
    /// JSON of exactly the reserved size grows the reservation; it used to compute -1 bytes of padding and trap the
    /// writer thread. Sizes around the reservation all read back whole, padded with spaces and one newline.
    @Test func contentOfExactlyTheReservedSizeFits() throws {
        let dir = TestEnvironment.temporaryDirectory("sidecar")
        let path = dir.appendingPathComponent("r.json").path
        let sidecar = SidecarFile(path: path)
        try sidecar.write(Data("{}".utf8))
        let reserved = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(reserved == SidecarFile.minimumReservation)
        for size in [reserved - 2, reserved - 1, reserved, reserved + 1] {
            let body = Data(("\"" + String(repeating: "x", count: size - 2) + "\"").utf8)
            try sidecar.write(body)
            let back = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(back.prefix(body.count) == body, "size \(size)")
            #expect(back.last == 0x0A && back.count > body.count, "size \(size): \(back.count) bytes")
            #expect(back.dropFirst(body.count).dropLast().allSatisfy { $0 == 0x20 })
        }
    }
}
