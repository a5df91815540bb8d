import CJack
import Foundation
import Synchronization

/// Closing calls (`jack_deactivate`, `jack_client_close`) wait for the server, and a stopped one (SIGSTOP, a
/// debugger, a hung machine) never answers. While the process ends, each such call runs on a thread of its own and
/// is given up after a bound: the files are finished before any of them (the engines' own order), so an exit that
/// leaves a client to the kernel loses nothing. A server that did not answer once is not asked again.
///
/// Threads: `boundClosingCalls` from the control thread as the process begins to end; the rest from the owner of a
/// client (the control thread).
extension JackClient {
    /// What the process's end allows: the bound (nil: closing calls wait as long as the server takes, as they must
    /// while a session goes on, since a client given up would stay in the graph) and the servers that did not answer.
    private static let closing = Mutex<(bound: Double?, silent: Set<String>)>((nil, []))

    /// From now on (the process is ending) a closing call waits at most `seconds` for its server.
    public static func boundClosingCalls(seconds: Double) {
        closing.withLock { $0.bound = seconds }
    }

    /// Runs `call` on the handle: directly, or while the process ends on a thread of its own for at most the bound.
    /// False when it was given up (or not made, the server having been silent before): the client is then
    /// `abandoned`, the call may still be running, and what its callbacks reach must stay allocated.
    func closingCall(_ what: String, _ handle: OpaquePointer, _ call: @escaping @Sendable (OpaquePointer) -> Void) -> Bool {
        let server = JackServer.effectiveName(serverName)
        let (bound, silent) = Self.closing.withLock { ($0.bound, $0.silent.contains(server)) }
        guard let bound else {
            call(handle)
            return true
        }
        if !silent {
            let done = DispatchSemaphore(value: 0)
            let raw = UInt(bitPattern: Int(bitPattern: handle))
            Thread.detachNewThread {
                call(OpaquePointer(bitPattern: Int(bitPattern: raw))!)
                done.signal()
            }
            if done.wait(timeout: .now() + bound) == .success { return true }
            Self.closing.withLock { _ = $0.silent.insert(server) }
        }
        logger.warning("the JACK server did not answer \(what) within \(bound) s: client left to the process's exit",
                       metadata: ["client": "\(name)", "server": "\(server)"])
        return false
    }
}
