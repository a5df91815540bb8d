import Foundation
import Realtime
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An isolated rack's configuration channel: the session sends its rack process a document (a preset holding the
/// session's table, the rack's `[[rack]]` table and the maps the rack runs, as `Preset.toml()` writes it; see
/// `Session.rackDocument`). The first, at each start, is the process's whole configuration, read with the loader
/// and checks every preset gets. Later ones come whenever a re-applied preset changes the rack's plugins, their
/// settings, its gain or its mix, and the process applies them to its own session as an in-process rack takes a
/// changed preset: control values without a rebuild, a new plugin list by a crossfaded swap, no restart and no gap.
/// Each document is framed as `LENGTH\n` followed by that many bytes of UTF-8, on a pipe to the child's fd 4.
public enum RackDocuments {
    /// The child's descriptor for the channel (`tandem rack --child --document-fd 4`).
    public static let childFD: Int32 = 4
    /// The largest document taken (a rack of many plugins with long URIs stays far below).
    public static let maxBytes = 1 << 20

    static func frame(_ text: String) -> [UInt8] {
        let body = Array(text.utf8)
        return Array("\(body.count)\n".utf8) + body
    }

    /// Takes the whole documents at the start of `buffer` out of it. Malformed framing empties the buffer.
    static func unframe(_ buffer: inout [UInt8]) -> [String] {
        var out: [String] = []
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            guard newline <= 8, let length = Int(String(decoding: buffer[..<newline], as: UTF8.self)),
                  length >= 0, length <= maxBytes else {
                buffer.removeAll()
                return out
            }
            let end = newline + 1 + length
            guard buffer.count >= end else { break }
            out.append(String(decoding: buffer[(newline + 1)..<end], as: UTF8.self))
            buffer.removeSubrange(..<end)
        }
        if buffer.count > maxBytes + 16 { buffer.removeAll() }
        return out
    }
}

/// The rack process's side of the channel: a thread asleep in poll() on the pipe, which keeps whole documents and
/// wakes the loop for each.
///
/// Threads: its own reader thread; `take` and `stop` from the control thread.
// @unchecked Sendable: `buffer` and `pending` belong to the reader thread (`readOnce`), which hands whole documents on
// through `documents` (a Mutex) and `wake`; `poller` is set in `init` and stopped on the control thread.
public final class RackDocumentReader: @unchecked Sendable {
    private let fd: Int32
    private let wake: Wakeup?
    private let documents = Mutex([String]())
    private var poller: PollingThread?
    /// The reader thread's own: bytes not yet a whole document.
    private var pending: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 16_384)

    public init(fd: Int32, wake: Wakeup?) {
        self.fd = fd
        self.wake = wake
        _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        poller = PollingThread(name: "tandem-rackdoc", fds: [fd]) { [self] in readOnce() }
    }

    deinit { stop() }

    /// The documents that arrived since the last call, in order. Control thread.
    public func take() -> [String] {
        documents.withLock { d in
            defer { d.removeAll() }
            return d
        }
    }

    /// Waits up to `seconds` for the first document (a supervised child's whole configuration at its start); those
    /// after it stay for `take`. Control thread.
    public func first(within seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let d = documents.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return d }
            usleep(2_000)
        }
        return nil
    }

    /// Ends the thread. Control thread; idempotent.
    public func stop() { poller?.stop() }

    private func readOnce() -> Bool {
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EAGAIN || errno == EINTR) { return true }
        guard n > 0 else { return false }   // the session closed its end
        pending.append(contentsOf: buffer.prefix(n))
        let whole = RackDocuments.unframe(&pending)
        guard !whole.isEmpty else { return true }
        documents.withLock { $0 += whole }
        wake?.post()
        return true
    }
}
