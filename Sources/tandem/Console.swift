import Foundation
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Standard output and standard error that can vanish without stopping a take: a pipe whose reader quit
/// (`| head -1`), a terminal that hung up (SSH dropped, tmux window killed), a full disk behind a redirect, a
/// reader that stopped reading. Writes never trap and never block for long; SIGPIPE is ignored process-wide.
///
/// What happens to the text: a stream that failed for good (EPIPE, EIO, EBADF) is marked gone and later writes to it
/// are skipped; a stream that is full (a stopped reader) gets what fits within `patienceSeconds` and the rest of the
/// line is dropped; a transient error (ENOSPC) drops that line only. Nothing here is ever reported by writing more.
///
/// Threads: any (the flags are atomics; each line is written with as few `write` calls as the stream takes).
enum Console {
    /// Whether stdout and stderr have gone for good.
    private static let stdoutHasGone = Atomic<Bool>(false)
    private static let stderrHasGone = Atomic<Bool>(false)
    /// How long one line may wait for a full stream before the rest of it is dropped.
    static let patienceSeconds = 0.05

    /// Call once at start, before any thread: a write to a closed pipe then fails with EPIPE instead of killing
    /// the process.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    static var stdoutGone: Bool { stdoutHasGone.load(ordering: .relaxed) }

    /// Writes `text` to stdout. False when it was not (all) written.
    @discardableResult
    static func out(_ text: String) -> Bool { write(text, fd: STDOUT_FILENO) }

    /// Writes `text` to stderr. False when it was not (all) written. When stderr is the journal, each line without a
    /// priority gets one: `tandem: note:` lines are notices, the rest errors.
    @discardableResult
    static func err(_ text: String) -> Bool {
        guard Journal.isStderr else { return write(text, fd: STDERR_FILENO) }
        return write(Journal.prefixed(text, priority: text.hasPrefix("tandem: note:") ? 5 : 3), fd: STDERR_FILENO)
    }

    private static func isGone(_ fd: Int32) -> Bool {
        fd == STDOUT_FILENO ? stdoutHasGone.load(ordering: .relaxed) : stderrHasGone.load(ordering: .relaxed)
    }

    private static func markGone(_ fd: Int32) {
        if fd == STDOUT_FILENO { stdoutHasGone.store(true, ordering: .relaxed) } else { stderrHasGone.store(true, ordering: .relaxed) }
    }

    static func write(_ text: String, fd: Int32) -> Bool {
        guard !isGone(fd), !text.isEmpty else { return text.isEmpty }
        let bytes = Array(text.utf8)
        let deadline = Date().addingTimeInterval(patienceSeconds)
        var offset = 0
        return bytes.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return true }
            while offset < raw.count {
                // Wait (briefly) until the stream takes bytes, so a stopped reader cannot hold the control loop.
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let left = max(0, deadline.timeIntervalSinceNow)
                let ready = poll(&p, 1, Int32((left * 1000).rounded(.up)))
                if ready < 0 && errno == EINTR { continue }
                if ready <= 0 { return false }
                if p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 && p.revents & Int16(POLLOUT) == 0 {
                    markGone(fd)
                    return false
                }
                let n = Glibc.write(fd, base + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    if Date() >= deadline { return false }
                    continue
                }
                if n < 0 && (errno == EPIPE || errno == EIO || errno == EBADF || errno == ENXIO) { markGone(fd) }
                return false
            }
            return true
        }
    }
}

/// swift-log's handler for Tandem's stderr: the format of swift-log's `StreamLogHandler`, written through `Console`
/// so a vanished or stalled stderr can neither kill the process nor hold the thread that logs.
struct ConsoleLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    init(label: String) { self.label = label }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: " ")
        if Journal.isStderr {
            // The journal stamps the time itself and keeps the level as the syslog priority.
            Console.err(Journal.prefixed("\(event.level) \(label) :\(meta) \(event.message)\n",
                                         priority: Journal.priority(event.level)))
            return
        }
        Console.err("\(Self.timestamp()) \(event.level) \(label) :\(meta) \(event.message)\n")
    }

    private static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [Int8](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// systemd's journal as stderr: when `$JOURNAL_STREAM` names stderr's device and inode (systemd.exec(5)), every line
/// starts with its syslog priority, `<3>` error … `<7>` debug, which journald strips and keeps as the entry's
/// priority (`journalctl -p warning`). A `JOURNAL_STREAM` inherited by a process whose stderr was redirected
/// elsewhere does not match, and the lines stay plain.
enum Journal {
    static let isStderr: Bool = matches(ProcessInfo.processInfo.environment["JOURNAL_STREAM"], fd: STDERR_FILENO)

    /// Whether `value` ("DEVICE:INODE", decimal) is the device and inode of `fd`.
    static func matches(_ value: String?, fd: Int32) -> Bool {
        guard let parts = value?.split(separator: ":"), parts.count == 2,
              let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return UInt64(st.st_dev) == device && UInt64(st.st_ino) == inode
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// `text` with `<priority>` before each line that has none (journald reads one entry per line).
    static func prefixed(_ text: String, priority: Int) -> String {
        var out = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.offset > 0 { out += "\n" }
            if line.element.isEmpty { continue }
            if line.element.first == "<", line.element.dropFirst().first?.isNumber == true,
               line.element.dropFirst(2).first == ">" {
                out += line.element
            } else {
                out += "<\(priority)>" + line.element
            }
        }
        return out
    }
}
