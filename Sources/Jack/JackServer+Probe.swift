#if canImport(Glibc)
import Glibc
#endif
import CJack
import Foundation

/// Whether a JACK server runs, asked without a libjack client where the library allows it.
///
/// A throwaway client is not a harmless question: every `jack_client_open` and `jack_client_close` goes through
/// libjack2's process-wide state (it frees the process's other clients after a server loss, `JackClients`; it opens
/// and closes its metadata database with the first and last client). A session waiting for its lost server asked
/// every retry that way and hung three times in 690 flap rounds inside the probe's `jack_client_close`, on a libjack
/// mutex held by no thread, just after the database said "BDB2034 unable to allocate memory for mutex" (issue 43,
/// item A). jackd2's server listens on a Unix socket, `/dev/shm/jack_NAME_UID_0` (`jack_server_dir`,
/// `JackSocket.cpp`'s `BuildName`: `/` and `\` in NAME become `_`; no UID with `$JACK_PROMISCUOUS_SERVER`), and
/// libjack2 asks whether a server runs by connecting to it and closing (`server_connect` before it starts one).
/// The server takes a connection that never sent a request as such a check and drops it. So with jackd2's libjack
/// the probe is that connect, and libjack is not called; other libraries (PipeWire's libjack, JACK1's) are asked
/// with a client as before.
extension JackServer {
    /// Whether a client can connect to the server named `name` now: its request socket accepts connections (a server
    /// that is stopped with SIGSTOP counts as running). Makes no libjack client when the process uses jackd2's
    /// libjack. Any thread.
    public static func probe(_ name: String) -> Bool {
        guard isUsableName(name) else { return false }
        guard libraryIsJack2 else { return probeWithClient(name) }
        return serverSocketAccepts(socketPath(name))
    }

    /// Where jackd2's server named `name` listens for clients of effective user `uid` (`promiscuous`: the server
    /// and its clients run with `$JACK_PROMISCUOUS_SERVER`, so the path carries no UID).
    static func socketPath(_ name: String, uid: uid_t = geteuid(),
                           promiscuous: Bool = getenv("JACK_PROMISCUOUS_SERVER") != nil) -> String {
        let rewritten = String(name.map { $0 == "/" || $0 == "\\" ? "_" : $0 })
        return promiscuous ? "/dev/shm/jack_\(rewritten)_0" : "/dev/shm/jack_\(rewritten)_\(uid)_0"
    }

    /// Whether the loaded libjack is jackd2's (its version string is `1.9.x`; PipeWire's says "3.0.0.0 (using
    /// PipeWire …)", JACK1's `0.12x`). Read once: the library does not change while the process runs.
    static let libraryIsJack2: Bool = {
        guard let version = jack_get_version_string() else { return false }
        return String(cString: version).hasPrefix("1.9.")
    }()

    /// Whether a Unix stream socket at `path` has a listener: a non-blocking connect succeeds, or the listener's
    /// queue is full (jackd2 listens with a backlog of 1, and a server that is starting or stopped has not accepted
    /// yet). A socket file left by a killed server refuses (`ECONNREFUSED`); a missing one is `ENOENT`. The
    /// connection is closed at once, which the server sees as a hang-up and drops; nothing is left open.
    static func serverSocketAccepts(_ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
                        | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        let length = socklen_t((MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2) + bytes.count + 1)
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
            }
            let error = errno
            if result == 0 { return true }
            if error == EINTR { continue }
            return error == EAGAIN || error == EINPROGRESS || error == EALREADY || error == EISCONN
        }
    }

    /// The probe through libjack: opens a client and closes it (for libraries whose server has no known socket).
    static func probeWithClient(_ name: String) -> Bool {
        var status = jack_status_t(0)
        let options = jack_options_t(JackNoStartServer.rawValue)
        guard let c = JackClients.open("tandem-probe", options: options, status: &status, server: name) else {
            return false
        }
        jack_client_close(c)
        return true
    }
}
