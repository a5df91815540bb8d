import Control
import Coordinator
import Engine
import Foundation
import HTTPTypes
import HummingbirdWebSocket
import Logging
import NIOCore
import Synchronization
import Takes

/// `GET /api/events` upgraded to a WebSocket: the session's events in its one numbered stream, and its meters at the
/// rate the client asks (`?meters=30`, at most 60 a second; none by default). `?since=N` catches up from event N
/// (or says `missed` when those are gone). Every message is one JSON object:
///
///     {"type":"hello","sequence":N,"version":"…"}          first: the last event's number
///     {"type":"event","sequence":N,"kind":"…","text":"…","time":"…"}
///     {"type":"missed","after":N}                          events after N are gone: read the state again
///     {"type":"meters","meters":[{"peakDB":…,"rmsDB":…},…]}
///
/// A client that does not take a message within `writeSeconds` is cut off and counted (a client that closes, or whose
/// connection breaks, is not): it never delays the session or another client (each client is its own task; the session's loop only publishes what they read).
extension HTTPServer {
    static let writeSeconds = 2.0
    static let maxMeterRate = 60.0

    /// The upgrade decision for a WebSocket handshake: only `/api/events`, with the token and from an allowed
    /// origin; a refusal is answered with its reason (401, 403, 404, 503) by the connection's guard.
    func shouldUpgrade(_ request: HTTPRequest, channel: any Channel) async -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        func refuse(_ status: HTTPResponse.Status, _ why: String) async -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
            self.stats.count("\(status.code)")
            (try? await channel.pipeline.handler(type: ConnectionGuard.self).get())?.refuse(status, why)
            return .dontUpgrade
        }
        let path = request.path ?? ""
        guard path == "/api/events" || path.hasPrefix("/api/events?") else {
            return await refuse(.notFound, "no WebSocket at \(path.prefix { $0 != "?" }) (the event stream is /api/events)")
        }
        switch configuration.access.check(request, changes: true, tokenInQuery: true) {
        case .allowed: break
        case .unauthorized: return await refuse(.unauthorized, HTTPAccess.unauthorizedMessage)
        case .forbidden(let why): return await refuse(.forbidden, why)
        }
        guard feed.join() else {
            return await refuse(.serviceUnavailable, "\(configuration.maxEventClients) event streams are open; no more")
        }
        // The slot is the stream's from here; an upgrade that never starts the stream (the client left before the
        // handshake's answer, the pipeline failed) gives it back when the connection closes.
        let slot = StreamSlot(feed: feed)
        channel.closeFuture.whenComplete { _ in slot.releaseUnlessStarted() }
        let since = HTTPAccess.queryItem("since", in: path).flatMap { UInt64($0) }
        let rate = HTTPAccess.queryItem("meters", in: path).flatMap { Double($0) }.map { min(max(0, $0), Self.maxMeterRate) } ?? 0
        let feed = self.feed, stats = self.stats
        return .upgrade([:]) { inbound, outbound, _ in
            guard slot.start() else { return }
            // Cut: the stream ended without the client's close: a write not taken within `writeSeconds`, or the
            // connection lost under it (the WebSocket's ping timeout closes a client that answers nothing). A client
            // that closed its stream (its close frame came while the connection was up) is not cut; nor is a stream
            // the server ends as it stops.
            var cut = false
            let closed = StreamSlot.Flag(), clientClosed = StreamSlot.Flag()
            let reader = Task {
                defer { closed.set() }
                // Pings and closes; messages are ignored. The iteration ends at the client's close frame, before
                // anything is closed on this side; or when the connection is gone.
                do {
                    for try await _ in inbound {}
                    if channel.isActive { clientClosed.set() }
                } catch {}
            }
            defer {
                reader.cancel()
                if cut { stats.count("slow") }
                feed.leave(slow: cut)
            }
            var last = since ?? feed.journal.last
            func send(_ object: [String: Any]) async -> WriteOutcome {
                guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
                      let text = String(data: data, encoding: .utf8) else { return .sent }
                return await Self.write(text, to: outbound)
            }
            /// Whether the stream goes on after a write; a stalled one is cut.
            func goesOn(_ outcome: WriteOutcome) -> Bool {
                if outcome == .stalled { cut = true }
                return outcome == .sent
            }
            guard goesOn(await send(["type": "hello", "sequence": feed.journal.last, "version": TandemVersion.string])) else {
                return
            }
            let meterInterval = rate > 0 ? 1 / rate : 0
            var nextMeters = Date()
            stream: while !Task.isCancelled && !feed.isClosed && !closed.isSet {
                let (events, missed) = feed.journal.since(last)
                if missed {
                    guard goesOn(await send(["type": "missed", "after": last])) else { break stream }
                }
                for e in events {
                    let (kind, text) = ControlProtocol.describe(e.event)
                    var message: [String: Any] = ["type": "event", "sequence": e.sequence, "kind": kind, "text": text,
                                                  "time": ISO8601DateFormatter().string(from: e.time)]
                    for (k, v) in Self.fields(e.event) { message[k] = v }
                    guard goesOn(await send(message)) else { break stream }
                    last = e.sequence
                }
                if meterInterval > 0 && Date() >= nextMeters {
                    nextMeters = Date().addingTimeInterval(meterInterval)
                    let meters = feed.meters
                    if !meters.isEmpty {
                        guard goesOn(await Self.write(meters, to: outbound)) else { break stream }
                    }
                }
                let pause = meterInterval > 0 ? max(0.005, nextMeters.timeIntervalSinceNow) : 0.05
                try? await Task.sleep(nanoseconds: UInt64(min(pause, 0.05) * 1e9))
            }
            if cut || Task.isCancelled || feed.isClosed { return }
            // A write failed, or the reader ended: whether the client closed is known once the reader is done.
            let deadline = Date().addingTimeInterval(1)
            while !closed.isSet && Date() < deadline { try? await Task.sleep(nanoseconds: 10_000_000) }
            cut = !clientClosed.isSet
        }
    }

    /// What an event names, as fields of its message (so a client need not read its text): the engine, plugin and
    /// control of a control change, and so on.
    static func fields(_ event: SessionEvent) -> [String: Any] {
        switch event {
        case .controlChanged(let engine, let plugin, let symbol, let value, let source):
            return ["engine": engine, "plugin": plugin, "symbol": symbol,
                    "value": value.isFinite ? Double(value) : 0, "source": source]
        case .bypassChanged(let engine, let plugin, let bypassed, let source):
            return ["engine": engine, "plugin": plugin, "bypassed": bypassed, "source": source]
        case .presetLoaded(let engine, let plugin, let preset, let source):
            return ["engine": engine, "plugin": plugin, "preset": preset, "source": source]
        case .chainEdited(let engine, _, let source):
            return ["engine": engine, "source": source]
        case .markerAdded(let take, let seconds, let label, let source):
            return ["take": take, "seconds": seconds, "label": label, "source": source]
        case .chainLevelChanged(let engine, let mix, let gainDB, let source):
            return ["engine": engine, "mix": mix, "gainDB": gainDB, "source": source]
        case .sceneRecalled(let name, let ramp, let applied, let missing, let lag, let source):
            var f: [String: Any] = ["scene": name, "rampMS": ramp, "applied": applied, "missing": missing, "source": source]
            if let lag, lag.isFinite { f["lagMS"] = lag }
            return f
        case .sceneMorphed(let from, let to, let position, let source):
            return ["from": from, "to": to, "position": position.isFinite ? position : 0, "source": source]
        case .scenesChanged(let detail, let source):
            return ["detail": detail, "source": source]
        default:
            return [:]
        }
    }

    /// How a write went: sent; the connection is gone (the client closed, or it broke); stalled (not taken within
    /// `writeSeconds`: the client is not reading).
    enum WriteOutcome: Sendable { case sent, gone, stalled }

    /// Writes one text message, or gives up after `writeSeconds`.
    static func write(_ text: String, to outbound: WebSocketOutboundWriter) async -> WriteOutcome {
        await withTaskGroup(of: WriteOutcome.self) { group in
            group.addTask {
                do {
                    try await outbound.write(.text(text))
                    return .sent
                } catch {
                    return .gone
                }
            }
            group.addTask {
                do {
                    try await Task.sleep(nanoseconds: UInt64(writeSeconds * 1e9))
                    return .stalled
                } catch {
                    return .gone   // cancelled: the write finished first
                }
            }
            let first = await group.next() ?? .gone
            group.cancelAll()
            return first
        }
    }
}

/// An event stream's slot in the feed, from the handshake's yes to the stream's end: taken by `shouldUpgrade`, kept by
/// the stream once it starts, given back when the connection closes if the stream never started (an upgrade that
/// failed after the yes), never twice.
///
/// Threads: any.
final class StreamSlot: Sendable {
    private let feed: LiveFeed
    /// 0: reserved; 1: the stream started (it leaves the feed itself); 2: released unstarted.
    private let state = Atomic<Int>(0)

    init(feed: LiveFeed) { self.feed = feed }

    /// The stream starts; false when the slot was already given back (the connection closed first).
    func start() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }

    func releaseUnlessStarted() {
        if state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged { feed.leave() }
    }

    /// A flag set once, read from any thread.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
        var isSet: Bool { value.load(ordering: .acquiring) }
    }
}
