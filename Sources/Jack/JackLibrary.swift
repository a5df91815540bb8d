import Foundation
import CJack
import Logging
import Synchronization

/// Process-wide libjack settings.
public enum JackLibrary {
    private static let verbose = Atomic<Bool>(false)
    private static let installed = Mutex(false)
    /// How many times libjack2 said it closed and deleted the process's clients ("Jack server was closed but
    /// clients are still allocated, cleanup...": `JackLibGlobals::Init`, at the start of a `jack_client_open` after
    /// any client of the process was shut down). Read around each open by `JackClients`.
    static let cleanups = Atomic<Int>(0)

    /// libjack prints its own errors and notes ("Cannot connect to server socket…" on every failed probe). Tandem
    /// reports failures itself, in words, so these go to the log (label `tandem.jack`, debug level) and are shown only
    /// when `verbose` is set; they never bypass the log handler (which swallows write errors on a vanished stderr).
    /// Control thread, before opening clients.
    public static func routeMessages(verbose: Bool) {
        JackLibrary.verbose.store(verbose, ordering: .relaxed)
        installHandlers()
    }

    /// Installs the message handlers once (every open does, so the cleanup is seen in a process that never routed
    /// messages). Any thread.
    static func installHandlers() {
        installed.withLock { done in
            guard !done else { return }
            done = true
            jack_set_error_function { message in
                guard let message else { return }
                if strstr(message, "clients are still allocated") != nil {
                    JackLibrary.cleanups.add(1, ordering: .sequentiallyConsistent)
                }
                if JackLibrary.verbose.load(ordering: .relaxed) {
                    Logger(label: "tandem.jack").debug("\(String(cString: message))")
                }
            }
            jack_set_info_function { message in
                if JackLibrary.verbose.load(ordering: .relaxed), let message {
                    Logger(label: "tandem.jack").debug("\(String(cString: message))")
                }
            }
        }
    }
}
