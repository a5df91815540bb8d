import Engine
import Foundation
import Jack
import Logging
import Presets

// The loop's heartbeat, server loss and return, and JACK transport.
extension Session {
    /// Reacts to everything that happened since the last call: server loss and return, graph changes, transport,
    /// worker deadlines, engine events. Call it every few tens of milliseconds from the control loop.
    public func poll() -> SessionOutcome {
        guard outcome == .running else { return outcome }
        if serverWatch.waiting {
            retryServer()
            return outcome
        }
        if let reason = lostReason() {
            serverLost(reason)
            return outcome
        }
        if let c = patchClient, generation(c) != graphGeneration { graphChanged() }
        else if let due = patchbay.nextDecision, clock.real().timeIntervalSinceReferenceDate >= due { graphChanged() }
        pollTransport()
        tickStall()
        workers.tick(now: clock.now())   // deadlines are stop times, of the wall clock
        tickSchedule()
        tickUnattended()
        tickRacks()
        tickPlugins()
        tickMaps()
        tickSceneTriggers(now: clock.now())   // after the maps: a recall by time or cue is the turn's last word
        announcePluginProblems()
        if let r = recorder { handleRecorderEvents(r.drainEvents()) }
        if let p = player { handlePlayerEvents(p.drainEvents()) }
        return outcome
    }

    /// Whether the control loop should turn often (every 20 ms, else a few times a second): an engine with a ring
    /// and takes to watch (recorder, player: meters, take rules, disk events), a server being waited for, a
    /// connection decision or a worker pending. A session of racks alone needs its loop only when something happens
    /// (JACK notifications, OSC datagrams and signals wake it) and for its slow checks (an isolated rack's heartbeat,
    /// plugin state): jalv's console sleeps on stdin, and a loop turning 50 times a second was half a one-plugin
    /// rack's CPU (0.0043 of 0.0083 CPU s/s at period 256, per-thread schedstat).
    public var wantsFrequentPolls: Bool {
        recorder != nil || player != nil || serverWatch.waiting || patchbay.nextDecision != nil || !workers.isEmpty
    }

    /// The longest the loop waits for nothing (when it need not turn often). A turn of a quiet loop costs
    /// 60-130 µs of a cold thread here, which for a one-plugin rack was 5-10 % of its CPU at two turns a second.
    /// - 2 s for a session whose engines are isolated racks alone: their supervisors wake it when a process ends
    ///   or speaks, so the turn is only their backstop hang check (three beats, `RackSupervisor`).
    /// - 1 s for one with in-process racks and no recorder or player: JACK notifications, OSC datagrams, signals
    ///   and MIDI for a map wake it; the turn saves changed plugin state, follows a plugin's latency and runs an
    ///   isolated rack's own hang check (1.5 s, `RackHeartbeat`).
    /// - 0.5 s otherwise.
    public var idleTurn: Double {
        guard timetable.isEmpty && recorder == nil && player == nil else { return 0.5 }
        if racks.isEmpty && !supervisors.isEmpty { return 2 }
        return racks.isEmpty ? 0.5 : 1
    }

    /// Why a client of this session was shut down by the server (nil: none was). Every loop turn, so no arrays.
    func lostReason() -> String? {
        func reason(_ c: JackClient?) -> String? {
            guard let c, c.wasShutDown else { return nil }
            return c.notifications.shutdownReason ?? "the JACK server shut the client down"
        }
        if let r = reason(recorder?.client) ?? reason(player?.client) ?? reason(patchOnlyClient) { return r }
        for rack in racks.values { if let r = reason(rack.client) { return r } }
        return nil
    }

    func serverLost(_ reason: String) {
        logger.error("JACK server lost", metadata: ["reason": "\(reason)"])
        events.append(.serverLost(reason))
        rememberPlayer()
        var report = ApplyReport()
        closeEngines(&report, end: .serverLost, detail: reason)
        guard serverWatch.lost(at: clock.real(), policy: preset?.session.onServerLoss ?? .resume) else {
            outcome = .finished(.serverLost)
            return
        }
        workers.start(.reconnect, detail: "waiting for JACK server '\(JackServer.effectiveName(server))'",
                      now: clock.now())
    }

    func retryServer() {
        guard serverWatch.probeDue(at: clock.real()), let p = preset else { return }
        // A restore that failed because the server went away again keeps what it had opened on that server: those
        // engines are lost with it (their clients closed by the next open, `JackClients`), so they go now and the
        // restore opens them anew, rather than keeping an engine without a client and losing it again at once.
        if let reason = lostReason() {
            var report = ApplyReport()
            closeEngines(&report, end: .serverLost, detail: reason)
        }
        let name = JackServer.effectiveName(server)
        guard JackServer.probe(name) else {
            serverWatch.notThere(at: clock.real())
            return
        }
        serverWatch.back()
        workers.finish(.reconnect)
        let lostText = serverWatch.lostAt.map { ISO8601DateFormatter().string(from: $0) } ?? "earlier"
        do {
            preset = nil
            _ = try applyDiff(p, notes: ["resumed after the JACK server was lost at \(lostText); the gap between "
                                           + "the previous take's end and this take's start was not recorded"])
            playerResume = nil
            events.append(.serverBack)
            logger.info("JACK server is back: clients, ports and connections restored")
        } catch {
            logger.error("JACK server is back but the session could not be restored", metadata: ["error": "\(error)"])
            serverWatch.restoreFailed(at: clock.real())
        }
    }

    func pollTransport() {
        let recTransport = preset?.recorder?.start == .transport
        let playTransport = preset?.player?.start == .transport
        guard recTransport || playTransport, let c = patchClient else { return }
        let now = c.transportRolling
        if now == rolling { return }
        rolling = now
        if now {
            if recTransport { _ = startTake() }
            if playTransport { player?.play() }
        } else {
            if recTransport { stopTake() }
            if playTransport { player?.pause() }
        }
    }
}
