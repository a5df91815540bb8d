import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What `~` means, the one rule of every surface (a preset's paths, `render`'s options, the HTTP token file): `$HOME`
/// when it is set and not empty, as a shell has it, else the home of the user's passwd entry.
public enum HomeFolder {
    /// The home folder under `environment`.
    public static func path(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        if let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir { return String(cString: dir) }
        return "/"
    }

    /// `s` with a leading `~` (alone or before '/') replaced by `path`; `~user` is that user's passwd home; any other
    /// path is given back as it is.
    public static func expand(_ s: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        guard s.hasPrefix("~") else { return s }
        if s == "~" { return path(environment: environment) }
        if s.hasPrefix("~/") { return (path(environment: environment) as NSString).appendingPathComponent(String(s.dropFirst(2))) }
        return (s as NSString).expandingTildeInPath
    }
}
