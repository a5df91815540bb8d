import Foundation
import CJack
import Logging
import Synchronization

/// Process-wide libjack settings.
public enum JackLibrary {
    private static let verbose = Atomic<Bool>(false)

    /// libjack prints its own errors and notes ("Cannot connect to server socket…" on every failed probe). Tandem
    /// reports failures itself, in words, so these go to the log (label `tandem.jack`, debug level) and are shown only
    /// when `verbose` is set; they never bypass the log handler (which swallows write errors on a vanished stderr).
    /// Control thread, before opening clients.
    public static func routeMessages(verbose: Bool) {
        JackLibrary.verbose.store(verbose, ordering: .relaxed)
        jack_set_error_function { message in
            if JackLibrary.verbose.load(ordering: .relaxed), let message {
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
