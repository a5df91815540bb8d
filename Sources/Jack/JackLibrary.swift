import CJack
import Foundation
import Synchronization

/// Process-wide libjack settings.
public enum JackLibrary {
    private static let verbose = Atomic<Bool>(false)

    /// libjack prints its own errors and notes to stderr ("Cannot connect to server socket…" on every failed
    /// probe). Tandem reports failures itself, in words, so these are shown only when `verbose` is set.
    /// Control thread, before opening clients.
    public static func routeMessages(verbose: Bool) {
        JackLibrary.verbose.store(verbose, ordering: .relaxed)
        jack_set_error_function { message in
            if JackLibrary.verbose.load(ordering: .relaxed), let message {
                FileHandle.standardError.write(Data("jack: \(String(cString: message))\n".utf8))
            }
        }
        jack_set_info_function { message in
            if JackLibrary.verbose.load(ordering: .relaxed), let message {
                FileHandle.standardError.write(Data("jack: \(String(cString: message))\n".utf8))
            }
        }
    }
}
