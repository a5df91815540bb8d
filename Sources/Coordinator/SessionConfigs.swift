import Engine
import Foundation
import Presets
import Takes

// The preset's tables as engine configurations, and which changes need a new JACK client.

extension RecorderConfig {
    /// The recorder a preset asks for.
    public init(section r: RecorderSection, session: SessionSection) {
        self.init()
        clientName = r.client
        ports = r.ports
        midiPorts = r.midiPorts
        directory = session.directory
        self.session = session.name
        template = r.template
        format = r.format
        stems = r.stems
        rotateSeconds = r.rotateSeconds
        rotateBytes = r.rotateBytes
        prerollSeconds = r.prerollSeconds
        maxDurationSeconds = r.maxDurationSeconds
        ringSeconds = r.ringSeconds
        plugins = r.plugins
        recordDry = r.recordDry
        pluginState = session.restorePlugins ? Session.pluginStateDirectory(session, engine: .recorder) : nil
        trigger = r.start == .level ? r.trigger : nil
        schedule = r.schedule
        rotateOnClock = r.rotateOnClock
        retention = r.retention
        loudness = r.loudnessOff ? nil : (r.loudness ?? (session.loudness ? .pairs(channels: r.ports.count) : nil))
    }

    /// Whether `other` can be applied without re-creating the JACK client (same name, ports, ring, pre-roll).
    func sameClient(as other: RecorderConfig) -> Bool {
        clientName == other.clientName && ports == other.ports && ringSeconds == other.ringSeconds
            && prerollSeconds == other.prerollSeconds && recordDry == other.recordDry && trigger == other.trigger
            && schedule == other.schedule && midiPorts == other.midiPorts
    }
}

extension PlayerConfig {
    public init(section p: PlayerSection, session: SessionSection? = nil) {
        self.init()
        plugins = p.plugins
        if let session, session.restorePlugins { pluginState = Session.pluginStateDirectory(session, engine: .player) }
        clientName = p.client
        ports = p.ports
        midiPorts = p.midiPorts
        queue = p.queue
        loop = p.loop
        gainDB = p.gainDB
        channelMap = p.channelMap
        resampleQuality = p.quality
        ringSeconds = p.ringSeconds
        startImmediately = false
        if let session, !p.loudnessOff, p.loudness || session.loudness {
            loudness = .programme(channels: p.ports.count)
        }
    }

    func sameClient(as other: PlayerConfig) -> Bool {
        clientName == other.clientName && ports == other.ports && ringSeconds == other.ringSeconds
            && resolvedMIDIPorts == other.resolvedMIDIPorts && loudness == other.loudness
    }
}
