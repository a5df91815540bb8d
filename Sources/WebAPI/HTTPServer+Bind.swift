import Foundation
import Presets
#if canImport(Glibc)
import Glibc
#endif

extension HTTPServer {
    /// Whether `address` can be listened on now, tried as the server will bind it (the first address the host
    /// resolves to, SO_REUSEADDR, bind, listen) and let go at once: nil when it can, else what to do, in words.
    /// Run before any JACK client is made, so a taken port is refused with nothing started (the server's own
    /// `start` still says the same should another program take the port in between).
    /// Control thread; does not block beyond the host's resolution.
    public static func bindProblem(_ address: HTTPAddress) -> String? {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(address.host, String(address.port), &hints, &list)
        guard rc == 0, let first = list else {
            return "the HTTP API cannot listen on \(address): no address for '\(address.host)' "
                + "(\(String(cString: gai_strerror(rc)))); give an address of this machine, e.g. 127.0.0.1:\(address.port)"
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return words(address, errno: errno) }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0, listen(fd, 1) == 0 else {
            return words(address, errno: errno)
        }
        return nil
    }

    /// What a failed bind of `address` tells the user: the address, why, and what to do.
    static func words(_ address: HTTPAddress, errno code: Int32) -> String {
        let why: String
        switch code {
        case EADDRINUSE:
            why = "port \(address.port) is taken: another program listens there; choose another port "
                + "(--http HOST:PORT, session.http, metrics_port) or stop that program"
        case EADDRNOTAVAIL:
            why = "'\(address.host)' is not an address of this machine; give one of its addresses, 127.0.0.1 "
                + "(this machine only) or 0.0.0.0 (every interface)"
        case EACCES:
            why = "ports below 1024 need privileges; choose a port from 1024 up"
        default:
            why = String(cString: strerror(code))
        }
        return "the HTTP API cannot listen on \(address): \(why)"
    }
}
