import Foundation
import Hummingbird
import Plugins

/// One control pinned to the page's favourites.
struct Favourite: Codable, Sendable, Equatable {
    var engine: String
    var plugin: String
    var symbol: String
}

/// The favourites of a session: `tandem-favourites.json` in its folder, shared by every device that opens the page.
/// Tandem overwrites the file only when it holds its own format (a file of that name that is not is refused, 409),
/// writes it whole to a temporary file and renames it into place.
///
/// Threads: any (each request reads or writes the file itself; the last write wins).
struct Favourites {
    static let fileName = "tandem-favourites.json"
    static let maxCount = 500
    static let maxBytes = 256 * 1024
    let directory: String

    var path: String { (directory as NSString).appendingPathComponent(Self.fileName) }

    /// What the file holds on disk.
    struct Document: Codable {
        var tandem = "favourites"
        var controls: [Favourite]
    }

    func read() throws -> [Favourite] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        guard data.count <= Self.maxBytes, let doc = try? JSONDecoder().decode(Document.self, from: data),
              doc.tandem == "favourites" else {
            throw HTTPError(.conflict, message: "\(path) is not a favourites file Tandem wrote; move it away to keep favourites")
        }
        return doc.controls
    }

    func write(_ list: [Favourite]) throws {
        _ = try read()   // refuses a file that is not ours
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? e.encode(Document(controls: list)) else {
            throw HTTPError(.internalServerError, message: "cannot encode the favourites")
        }
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw HTTPError(.conflict, message: "cannot write \(temporary): is the session folder writable?")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw HTTPError(.conflict, message: "cannot replace \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// The installed plugins, described once (lilv's description of every plugin takes a second or two and holds the
/// plugin host's lock) on a thread of its own, then served from memory to every request.
actor InstalledPlugins {
    static let shared = InstalledPlugins()
    private var cached: [PluginInfo]?
    private var waiting: Task<[PluginInfo], Never>?

    func all() async -> [PluginInfo] {
        if let cached { return cached }
        if let waiting { return await waiting.value }
        let task = Task.detached {
            await withCheckedContinuation { (c: CheckedContinuation<[PluginInfo], Never>) in
                Thread.detachNewThread { c.resume(returning: PluginHost.shared.plugins()) }
            }
        }
        waiting = task
        let list = await task.value
        cached = list
        waiting = nil
        return list
    }
}
