import Engine
import Foundation
import Presets
import Takes

// Takes that run themselves, on the control side: schedule windows opened and closed on their exact frames, the
// level trigger armed inside them, markers, and the first retention pass.
extension Session {
    /// Whether the recorder starts and ends its own takes (a level trigger or a schedule).
    public var isUnattended: Bool {
        preset?.recorder?.start == .level || preset?.recorder?.schedule != nil
    }

    /// How often the writer gets a fresh take context (ports and connections for the next triggered take; the
    /// wall-clock anchor clock-aligned chunks follow).
    static let contextRefreshSeconds = 5.0
    /// How far ahead of a schedule change (in real seconds) its frame is handed to the recorder.
    static let scheduleLeadSeconds = 0.1

    /// A new recorder: its schedule from the start, the trigger armed when no schedule governs it, and a retention
    /// pass.
    func startUnattended() {
        guard let r = recorder, let cfg = recorderConfig else { return }
        unattended = UnattendedState()
        let clock = cfg.clock
        if let texts = cfg.schedule, let schedule = Schedule.parse(texts).schedule {
            unattended.clock = ScheduleClock(schedule: schedule, zone: .current, now: { clock.now() })
        }
        if unattended.clock == nil && r.isLevelTriggered { r.armTrigger() }
        r.applyRetention()
    }

    /// Once per loop: refreshes the writer's context now and then, and opens or closes the schedule's window on
    /// the frame of the moment it names (handed over a little ahead, so the writer never has passed it).
    func tickUnattended() {
        guard let r = recorder, let cfg = recorderConfig else { return }
        if clock.real().timeIntervalSince(unattended.refreshedAt) >= Self.contextRefreshSeconds {
            unattended.refreshedAt = clock.real()
            r.refreshContext()
        }
        guard let clock = unattended.clock else { return }
        guard let active = unattended.active else {
            let on = clock.shouldRecord
            unattended.active = on
            unattended.nextChange = clock.nextChange
            logger.info(on ? "schedule: inside a window, recording" : "schedule: outside its windows, waiting",
                        metadata: ["next change": "\(unattended.nextChange.map { "\($0)" } ?? "never")"])
            if on { openWindow(r, at: nil) }
            return
        }
        guard let change = unattended.nextChange,
              clock.now().addingTimeInterval(Self.scheduleLeadSeconds * cfg.clock.scale) >= change else { return }
        let on = clock.schedule.isActive(at: change, in: clock.zone)
        let position = r.position(atWallClock: change)
        if on != active {
            if on { openWindow(r, at: position) } else { closeWindow(r, at: position) }
            logger.info(on ? "schedule: window opens" : "schedule: window closes",
                        metadata: ["at": "\(change)", "frame": "\(position)"])
        }
        unattended.active = on
        unattended.nextChange = clock.schedule.nextChange(after: change, in: clock.zone)
    }

    private func openWindow(_ r: Recorder, at position: Int?) {
        if r.isLevelTriggered {
            r.armTrigger()
        } else if !r.isRecording {
            r.startTake(at: position ?? r.streamPosition)
        }
    }

    private func closeWindow(_ r: Recorder, at position: Int) {
        if r.isLevelTriggered {
            r.disarmTrigger(at: position)
        } else {
            r.stopTake(.stopped, detail: "the schedule's window ended", at: position)
        }
    }

    /// Adds a marker at the frame the request arrived (`arrival`: a datagram's receive time) to the running take.
    /// Returns the stream position, or nil (and a refusal event) when no take runs.
    @discardableResult
    public func mark(label: String, source: String, arrival: Date? = nil) -> Int? {
        guard let r = recorder else {
            events.append(.refused("no recorder in this session"))
            return nil
        }
        guard let position = r.mark(label: label, source: source, arrival: arrival) else {
            events.append(.refused("no take is running: marker not kept"))
            return nil
        }
        if let t = r.takeStatus {
            events.append(.markerAdded(take: t.take, seconds: Double(t.frames) / Double(max(1, r.sampleRate)), label: label,
                                       source: source))
        }
        return position
    }
}
