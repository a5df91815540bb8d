import CJack
import Synchronization

/// The process's open clients, and the one door to `jack_client_open`.
///
/// libjack2 frees clients behind their owners' backs. When any client of the process is shut down (its server gone,
/// or the client thrown out), libjack sets a process-wide "server not running" flag, and the next `jack_client_open`
/// in the process (on any server, a probe included) first closes and deletes every client the process still has
/// (`JackLibGlobals::Init`, which says "Jack server was closed but clients are still allocated, cleanup..."). A
/// handle kept past that points at freed memory: `jack_deactivate`, `jack_client_close` or a port call on it
/// crashes, as a session did when its server died again while it was being restored on it (issue 43, item A:
/// `jack_deactivate` ← `Recorder.close` after the player's open failed; `jack_client_close` and `jack_deactivate`
/// ← `Session.closeEngines` after the retry's probe).
///
/// So every open goes through `open`, one at a time: it first closes the clients already shut down (their handles
/// are still valid, and libjack would free them), then opens, and when libjack said it cleaned up (a client shut
/// down between the two, the shutdown callback not yet run), every client that was open is known freed and
/// forgotten without a call. A client closed or forgotten here has no handle (every call on it does nothing) and
/// says `wasShutDown`, so its owner treats it as lost with its server.
///
/// Threads: `open` from the threads that own clients. A client closed or forgotten here is one another owner may
/// hold, so a process whose clients have several owner threads must not use a client while another thread opens
/// one (a session's clients and opens are all on its control thread).
enum JackClients {
    /// A registered client, held weakly: an owner's deinit closes it.
    private final class Entry: @unchecked Sendable {
        weak var client: JackClient?
        init(_ client: JackClient) { self.client = client }
    }

    /// Open clients by identity.
    private static let live = Mutex<[ObjectIdentifier: Entry]>([:])
    /// Serializes opens, so that a cleanup libjack reports belongs to the open that caused it.
    private static let opening = Mutex(())
    /// How many times this process called `jack_client_open` (tests: a probe that must make no client).
    static let opens = Atomic<Int>(0)

    /// Opens a client as `jack_client_open` does (`server` nil: the default server), first retiring what libjack
    /// would free. Nil when the open failed (`status` says why).
    static func open(_ name: String, options: jack_options_t, status: inout jack_status_t,
                     server: String?) -> OpaquePointer? {
        JackLibrary.installHandlers()
        return opening.withLock { _ -> OpaquePointer? in
            let shutDown = live.withLock { $0.values.compactMap(\.client) }
                .filter { $0.notifications.count(.shutdown) > 0 }
            for client in shutDown {
                client.logger.debug("closed before an open: its server shut it down",
                                    metadata: ["client": "\(client.name)"])
                client.close()
            }
            let before = JackLibrary.cleanups.load(ordering: .sequentiallyConsistent)
            opens.add(1, ordering: .relaxed)
            let opened: OpaquePointer? = name.withCString { cname in
                if let server { return server.withCString { tandem_jack_client_open(cname, options, &status, $0) } }
                return tandem_jack_client_open(cname, options, &status, nil)
            }
            if JackLibrary.cleanups.load(ordering: .sequentiallyConsistent) != before {
                let freed = live.withLock { entries -> [JackClient] in
                    defer { entries.removeAll() }
                    return entries.values.compactMap(\.client)
                }
                for client in freed { client.forgetFreedHandle() }
            }
            return opened
        }
    }

    /// `client` is open: it may be closed or forgotten by a later open.
    static func register(_ client: JackClient) {
        live.withLock { $0[ObjectIdentifier(client)] = Entry(client) }
    }

    /// `client` is closed (or its owner forgot it).
    static func unregister(_ client: JackClient) {
        _ = live.withLock { $0.removeValue(forKey: ObjectIdentifier(client)) }
    }
}
