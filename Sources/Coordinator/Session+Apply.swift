import Engine
import Foundation
import Jack
import Logging
import Presets
import SoundFile
import Takes

// Applying a preset by diff: what differs is changed, what is the same is left alone (0 graph changes for the same
// setup).
extension Session {
    /// Whether an engine created now must refuse to start when a plugin cannot run.
    var strictPlugins: Bool { !started && preset?.session.onPluginError != .bypass }

    /// What runs now, as the apply plan sees it.
    var runningSetup: ApplyPlan.Current {
        ApplyPlan.Current(server: preset.map { $0.session.server }, recorder: recorderConfig, player: playerConfig,
                          racks: rackConfigs, isolated: supervisors.mapValues { ($0.rack, $0.maps) },
                          patchClient: patchOnlyClient != nil)
    }

    /// The recorder `wanted` asks for, on the session's clock and with its fault hooks.
    func recorderConfig(for wanted: Preset) -> RecorderConfig? {
        wanted.recorder.map {
            var c = RecorderConfig(section: $0, session: wanted.session)
            c.clock = environment.clock
            c.faults = environment.faults
            return c
        }
    }

    /// Plans the change from what runs to `wanted` (`ApplyPlan`) and carries it out.
    func applyDiff(_ wanted: Preset, notes: [String]) throws(EngineError) -> ApplyReport {
        var report = ApplyReport()
        let plan = ApplyPlan(runningSetup, wanted: wanted, recorder: recorderConfig(for: wanted),
                             player: wanted.player.map { PlayerConfig(section: $0, session: wanted.session) })
        if plan.closeAll {
            logger.info("server changed: closing both clients", metadata: ["server": "\(JackServer.effectiveName(wanted.session.server))"])
            closeEngines(&report, end: .stopped)
        }
        preset = wanted

        // Recorder.
        switch plan.recorder {
        case .keep, .open:
            break
        case .update(let want):
            if let r = recorder, let current = recorderConfig {
                if applyPlugins(.recorder, current: current.plugins, want: want.plugins, chain: r.plugins.chain,
                                replace: { r.replacePlugins($0, savedState: nil) }) {
                    report.reconfigured.append("recorder plugins")
                }
                if !current.differsOnlyInPlugins(from: want) {
                    r.reconfigure(want)
                    report.reconfigured.append("recorder")
                    logger.info("recorder settings changed; they apply from the next take")
                }
                recorderConfig = want
            }
        case .reopen, .close:
            recorder?.close(end: .stopped, detail: "the preset changed the recorder's client or ports")
            recorder = nil
            recorderConfig = nil
            report.clientsClosed += 1
            workers.finish(.take)
        }
        var newRecorder = false
        if case .open(let want) = plan.recorder.opening {
            try openRecorder(want, wanted, &report)
            newRecorder = true
        }

        // Player.
        switch plan.player {
        case .keep, .open:
            break
        case .update(let want):
            if let pl = player, let current = playerConfig {
                if applyPlugins(.player, current: current.plugins, want: want.plugins, chain: pl.plugins.chain,
                                replace: { pl.replacePlugins($0, savedState: nil) }) {
                    report.reconfigured.append("player plugins")
                }
                if current.gainDB != want.gainDB { pl.setGain(dB: want.gainDB) }
                if current.loop != want.loop || current.channelMap != want.channelMap
                    || current.resampleQuality != want.resampleQuality {
                    pl.reconfigure(loop: want.loop, map: want.channelMap, quality: want.resampleQuality)
                }
                if current.queue != want.queue { pl.load(want.queue) }
                if !current.differsOnlyInPlugins(from: want) { report.reconfigured.append("player") }
                playerConfig = want
            }
        case .reopen, .close:
            player?.close()
            player = nil
            playerConfig = nil
            report.clientsClosed += 1
            workers.finish(.playback)
        }
        var newPlayer = false
        if case .open(var want) = plan.player.opening {
            want.startImmediately = false
            do {
                player = try Player(config: want, server: server, logger: Logger(label: "tandem.play"),
                                    strictPlugins: strictPlugins, loopWakeup: environment.loopWakeup)
            } catch {
                // Nothing started: the recorder this apply opened goes too.
                if newRecorder, let r = recorder {
                    r.close(end: .stopped, detail: "the player could not start")
                    recorder = nil
                    recorderConfig = nil
                }
                throw error
            }
            playerConfig = want
            report.clientsOpened += 1
            report.portsRegistered += want.ports.count
            newPlayer = true
            // Cued (the reader has taken the jump) before anything plays: no stale frame from the top goes out.
            if let frame = wanted.player?.seekFrame, frame > 0 {
                _ = player?.cue(item: 0, frame: frame)
            } else if let seek = wanted.player?.seekSeconds, seek > 0, let first = want.queue.first,
                      let rate = (try? SoundFileReader(path: first).sampleRate)
                        ?? (MIDIItem.isMIDIFile(first) ? player?.sampleRate : nil) {   // MIDI: frames at the server's rate
                _ = player?.cue(item: 0, frame: Limits.frames(seconds: seek, rate: Double(rate)) ?? 0)
            }
            cueResumedPlayer()
        }

        do {
            try applyRacks(plan.racks, wanted, &report, strict: strictPlugins)
        } catch {
            // Nothing started by this apply stays: a first start that fails starts nothing.
            if !started {
                var ignored = ApplyReport()
                closeEngines(&ignored, end: .stopped, detail: "a rack could not start")
            }
            throw error
        }

        applyRules(&report)
        start(newRecorder: newRecorder, newPlayer: newPlayer, notes: notes)
        if report.graphChanges > 0 || !report.reconfigured.isEmpty {
            logger.info("preset applied", metadata: ["changes": "\(report)"])
        } else {
            logger.info("preset applied: nothing changed")
        }
        return report
    }

    func openRecorder(_ config: RecorderConfig, _ wanted: Preset, _ report: inout ApplyReport) throws(EngineError) {
        var want = config
        // Takes of this session already in the folder (an earlier run) go on being counted.
        let earlier = TakeRecovery.highestTake(in: config.directory, session: config.session)
        want.firstTake = max(lastTake, earlier) + 1
        if wanted.session.createDirectory && !FileManager.default.fileExists(atPath: want.directory) {
            do {
                try FileManager.default.createDirectory(atPath: want.directory, withIntermediateDirectories: true)
            } catch {
                throw EngineError(.badDirectory, "cannot create output directory '\(want.directory)': \(error.localizedDescription)")
            }
        }
        recorder = try Recorder(config: want, server: server, logger: Logger(label: "tandem.rec"),
                                strictPlugins: strictPlugins, loopWakeup: environment.loopWakeup)
        recorder?.chainSnapshot = { [weak self] in self?.chainSnapshot() ?? [:] }
        if recorder?.client.isRealtime == false {
            logger.warning("\(Self.notRealtimeWarning)")
        }
        want.firstTake = 1
        recorderConfig = want
        report.clientsOpened += 1
        report.portsRegistered += want.ports.count
    }

    func closeEngines(_ report: inout ApplyReport, end: TakeEnd, detail: String? = nil) {
        if let r = recorder {
            r.close(end: end, detail: detail)
            forward(r.drainEvents())
            report.clientsClosed += 1
        }
        if let p = player {
            p.close()
            report.clientsClosed += 1
        }
        recorder = nil
        player = nil
        recorderConfig = nil
        playerConfig = nil
        closeRacks(&report)
        patchbay.reset()
        workers.finish(.take)
        workers.finish(.playback)
    }

    static let notRealtimeWarning = "the JACK server runs without real-time scheduling (jackd -R, with rtprio"
        + " allowed): a cycle woken late can lose a period and record the next twice (counted in each take's report"
        + " as repeatedFrames)"

    /// Record-while-playing: a take and the player start on the same frame, a few periods ahead.
    func startAligned(_ r: Recorder, _ p: Player, notes: [String]) {
        p.waitForFill(seconds: 5)
        let at = p.client.frameTime &+ UInt32(4 * max(64, p.client.bufferSize))
        r.startTake(atFrameTime: at, notes: notes,
                    playback: PlaybackAlignment(files: p.queue, startFrameTime: at, from: p.position))
        p.play(atFrameTime: at)
    }

    /// Starts what the start modes ask for, on engines created by this apply.
    func start(newRecorder: Bool, newPlayer: Bool, notes: [String]) {
        let recStart = preset?.recorder?.start
        let playStart = preset?.player?.start
        if let r = recorder, let p = player, newRecorder || newPlayer, playStart == .withRecorder {
            if recStart == .immediately {
                startAligned(r, p, notes: notes)
                return
            }
            // Armed or transport (the loader refuses the others): cued until the next take starts.
            p.waitForFill(seconds: 5)
            playerFollowsTake = true
        }
        if newRecorder { startUnattended() }
        if newRecorder, recStart == .immediately, preset?.recorder?.schedule == nil, let r = recorder {
            r.startTake(at: r.streamPosition, notes: notes)
        }
        if newRecorder, preset?.session.exitAfter == .take {
            timetable.stop(at: preset?.recorder?.stopAt, after: clock.now())
        }
        if newPlayer, playerResume == nil, let at = preset?.player?.startAt,
           timetable.startPlayer(at: at, after: clock.now()) {
            // Cued until then; `tickSchedule` starts it on the frame that corresponds to the moment.
            player?.waitForFill(seconds: 5)
            return
        }
        if newPlayer, playsOnStart(playStart), let p = player {
            p.waitForFill(seconds: 5)
            p.play()
        }
    }
}
