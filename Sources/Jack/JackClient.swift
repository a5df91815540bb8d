import CJack
import Logging
import Realtime
#if canImport(Glibc)
import Glibc
#endif

/// The C signature of a JACK process callback. Implementations must be closure literals that capture nothing and
/// reach all their state through `context`.
public typealias JackProcessCallback = @convention(c) (jack_nframes_t, UnsafeMutableRawPointer?) -> Int32

/// One JACK client: the Swift face of libjack for the control side.
///
/// Threads: control side only (not thread-safe; one owner). The process callback runs on JACK's RT thread and
/// touches only the state behind its context pointer; notifications arrive in `notifications`.
// @unchecked Sendable: `handle`, `isActive` and `notificationContext` change only on the control thread that owns the
// client (open, activate, close); JACK's callbacks never reach this object, only the state behind their context
// pointers (`notifications`, atomic cells).
public final class JackClient: @unchecked Sendable {
    /// The client handle; nil once closed.
    public private(set) var handle: OpaquePointer?
    /// The name the server gave this client (may differ from the requested one only if JACK renamed it).
    public let name: String
    /// The server this client belongs to (nil: the default server).
    public let serverName: String?
    /// Counters and latest values from JACK's notification callbacks.
    public let notifications: JackNotifications
    private var notificationContext: UnsafeMutableRawPointer?
    public private(set) var isActive = false
    /// Whether a closing call was given up on as the process ends (see `boundClosingCalls`): libjack may still run
    /// this client's callbacks, so what they reach (the engine's state, its chains) must never be freed.
    public private(set) var abandoned = false
    /// Whether libjack closed and deleted this client itself (`JackClients`): its handle was forgotten unused.
    public private(set) var freedByLibrary = false
    let logger: Logger

    /// Opens a client on `server` (nil: `$JACK_DEFAULT_SERVER` or "default"). Never starts a server, and never lets
    /// JACK rename the client silently: a taken name is an error.
    /// `loopWakeup`: posted on every notification but an xrun (see `JackNotifications.loop`).
    public init(name: String, server: String?, logger: Logger = Logger(label: "tandem.jack"),
                loopWakeup: Wakeup? = nil) throws(JackError) {
        self.logger = logger
        var status = jack_status_t(0)
        let options = jack_options_t(JackNoStartServer.rawValue | JackUseExactName.rawValue)
        let effective = JackServer.effectiveName(server)
        guard JackServer.isUsableName(effective) else {
            throw JackError(.openFailed, "cannot open JACK client '\(name)': the server name is \(effective.utf8.count) bytes "
                            + "long (at most \(JackNames.serverBytes))")
        }
        guard !name.isEmpty, name.utf8.count <= JackNames.clientBytes else {
            throw JackError(.openFailed, "cannot open JACK client: its name is \(name.utf8.count) bytes long "
                            + "(1 to \(JackNames.clientBytes))")
        }
        let opened = JackClients.open(name, options: options, status: &status, server: server)
        guard let opened else {
            let serverName = JackServer.effectiveName(server)
            let where_ = "JACK server '\(serverName)'"
            if status.rawValue & JackServerFailed.rawValue != 0 {
                throw JackError(.serverNotRunning, "cannot open JACK client '\(name)': no \(where_) is running", status: status)
            }
            // jackd2 answers a taken exact name with a bare "communication error"; ask the server who is there.
            if status.rawValue & JackNameNotUnique.rawValue != 0 || JackServer.hasClient(named: name, on: serverName) {
                throw JackError(.nameTaken, "cannot open JACK client '\(name)' on \(where_): a client of that name is "
                                + "already there (another Tandem, or another program): choose another client name")
            }
            throw JackError(.openFailed, "cannot open JACK client '\(name)' on \(where_)", status: status)
        }
        // PipeWire's libjack ignores JackUseExactName: it opens a clashing name and renames the client's ports to
        // NAME-<id>:… while jack_get_client_name still says NAME. Refuse that as jackd2 does, else this client's
        // ports and every rule naming them would be another program's: the name must belong to this client.
        let given = String(cString: jack_get_client_name(opened))
        if given != name || !Self.nameIsOwn(name, opened) {
            jack_client_close(opened)
            throw JackError(.nameTaken, "cannot open JACK client '\(name)' on JACK server "
                            + "'\(JackServer.effectiveName(server))': a client of that name is already there (another "
                            + "Tandem, or another program): choose another client name")
        }
        handle = opened
        self.name = given
        self.serverName = server
        notifications = JackNotifications.allocate(loop: loopWakeup)
        notificationContext = notifications.install(on: opened)
        JackClients.register(self)
    }

    deinit {
        close()
        if !abandoned { notifications.deallocate() }
    }

    /// Whether the server's client called `name` is `client` itself (not another one of the same name).
    private static func nameIsOwn(_ name: String, _ client: OpaquePointer) -> Bool {
        guard let own = jack_client_get_uuid(client) else { return true }
        defer { jack_free(own) }
        guard let holder = name.withCString({ jack_get_uuid_for_client_name(client, $0) }) else { return true }
        defer { jack_free(holder) }
        return strcmp(own, holder) == 0
    }

    private func live() throws(JackError) -> OpaquePointer {
        guard let handle else { throw JackError(.clientClosed, "JACK client '\(name)' is closed") }
        return handle
    }

    /// The server's sample rate in frames per second.
    public var sampleRate: Int { handle.map { Int(jack_get_sample_rate($0)) } ?? 0 }
    /// The server's period (frames per process cycle).
    public var bufferSize: Int { handle.map { Int(jack_get_buffer_size($0)) } ?? 0 }
    /// JACK's frame time now (an estimate, for the control side).
    public var frameTime: UInt32 { handle.map { jack_frame_time($0) } ?? 0 }
    /// The frame time at the start of the server's current cycle: unlike `frameTime` (extrapolated from the clock),
    /// it stands still while the server runs no cycle. Any thread (JACK2 reads it from the server's shared state).
    public var cycleFrameTime: UInt32 { handle.map { jack_last_frame_time($0) } ?? 0 }
    /// Whether the server runs with real-time scheduling.
    public var isRealtime: Bool { handle.map { jack_is_realtime($0) != 0 } ?? false }
    /// Whether JACK transport is rolling (starting counts as not yet).
    public var transportRolling: Bool {
        guard let handle else { return false }
        return jack_transport_query(handle, nil) == JackTransportRolling
    }

    /// Asks the server for a new period (every client gets a buffer-size callback). Returns false when refused.
    @discardableResult
    public func requestBufferSize(_ frames: Int) -> Bool {
        guard let handle else { return false }
        return jack_set_buffer_size(handle, jack_nframes_t(frames)) == 0
    }

    /// Starts JACK transport rolling (for tests and transport masters).
    public func startTransport() { if let handle { jack_transport_start(handle) } }

    /// Stops JACK transport.
    public func stopTransport() { if let handle { jack_transport_stop(handle) } }

    /// The server's DSP load in percent.
    public var cpuLoad: Double { handle.map { Double(jack_cpu_load($0)) } ?? 0 }

    // MARK: Ports

    /// Registers a port named `shortName` on this client (audio unless `type` says MIDI).
    public func registerPort(_ shortName: String, direction: PortDirection,
                             type: PortType = .audio) throws(JackError) -> JackPort {
        let h = try live()
        guard let port = jack_port_register(h, shortName, type.jackType, direction.flags, 0) else {
            throw JackError(.portRegisterFailed, "cannot register port '\(name):\(shortName)' (name taken or invalid?)")
        }
        return JackPort(handle: port)
    }

    /// Unregisters one of this client's ports.
    public func unregisterPort(_ port: JackPort) {
        guard let handle else { return }
        jack_port_unregister(handle, port.handle)
    }

    /// Connects `source` (an output port) to `destination` (an input port), by full names. Connecting ports that are
    /// already connected is not an error.
    public func connect(_ source: String, _ destination: String) throws(JackError) {
        let rc = jack_connect(try live(), source, destination)
        if rc != 0 && rc != EEXIST {
            throw JackError(.connectFailed, "cannot connect '\(source)' to '\(destination)' (does each port exist, "
                                           + "and is the first an output and the second an input?)")
        }
    }

    /// Disconnects `source` from `destination`, by full names.
    public func disconnect(_ source: String, _ destination: String) throws(JackError) {
        if jack_disconnect(try live(), source, destination) != 0 {
            throw JackError(.disconnectFailed, "cannot disconnect '\(source)' from '\(destination)'")
        }
    }

    /// Full names of ports matching a regular expression (nil: all), with flags narrowing direction and `type`
    /// narrowing the kind (nil: every kind).
    public func ports(matching pattern: String? = nil, direction: PortDirection? = nil,
                      type: PortType? = nil) -> [String] {
        guard let handle else { return [] }
        let flags = direction?.flags ?? 0
        guard let list = jack_get_ports(handle, pattern, type.map { "^" + $0.jackType + "$" }, flags) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        return Self.strings(list)
    }

    /// Full names of the ports connected to the port named `portName`.
    public func connections(of portName: String) -> [String] {
        guard let handle, let port = jack_port_by_name(handle, portName) else { return [] }
        guard let list = jack_port_get_all_connections(handle, port) else { return [] }
        defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
        return Self.strings(list)
    }

    /// Whether a port of this name exists in the graph.
    /// Whether the server has a client of this name now.
    public func clientExists(_ name: String) -> Bool {
        guard let handle, let uuid = jack_get_uuid_for_client_name(handle, name) else { return false }
        jack_free(uuid)
        return true
    }

    public func portExists(_ portName: String) -> Bool {
        guard let handle else { return false }
        return jack_port_by_name(handle, portName) != nil
    }

    /// Whether the named port is an output (nil if it does not exist).
    public func isOutput(_ portName: String) -> Bool? {
        guard let handle, let port = jack_port_by_name(handle, portName) else { return nil }
        return jack_port_flags(port) & Int32(JackPortIsOutput.rawValue) != 0
    }

    /// The latency range JACK computed for a port: capture latency for inputs of ours (how old the audio is),
    /// playback latency for outputs (how long until it is heard).
    ///
    /// For a connected port on the upstream side of the question (an input's capture latency, an output's playback
    /// latency) the range is taken from its connections, as JACK itself computes it (the lowest minimum and the
    /// highest maximum of the ports across): JACK stores that value only when the client's latency callback has
    /// run after a graph change, which happens asynchronously, so a take started right after its connections were
    /// made read 0 (seen with `tandem run` over NetJACK2).
    public func latency(of portName: String, capture: Bool) -> LatencyRange? {
        guard let handle, let port = jack_port_by_name(handle, portName) else { return nil }
        let mode = capture ? JackCaptureLatency : JackPlaybackLatency
        let isInput = jack_port_flags(port) & Int32(JackPortIsInput.rawValue) != 0
        var range = jack_latency_range_t()
        if isInput == capture, let list = jack_port_get_all_connections(handle, port) {
            defer { jack_free(UnsafeMutableRawPointer(mutating: list)) }
            var low = UInt32.max, high: UInt32 = 0
            var i = 0
            while let name = list[i] {
                if let other = jack_port_by_name(handle, name) {
                    jack_port_get_latency_range(other, mode, &range)
                    low = min(low, range.min)
                    high = max(high, range.max)
                }
                i += 1
            }
            if low <= high { return LatencyRange(min: low, max: high) }
        }
        jack_port_get_latency_range(port, mode, &range)
        return LatencyRange(min: range.min, max: range.max)
    }

    private static func strings(_ list: UnsafeMutablePointer<UnsafePointer<CChar>?>) -> [String] {
        var out: [String] = []
        var i = 0
        while let s = list[i] {
            out.append(String(cString: s))
            i += 1
        }
        return out
    }

    // MARK: Lifecycle

    /// Sets the process callback, calls it once on this (control) thread so one-time runtime work never happens on
    /// the RT thread, runs `afterWarmUp` (reset what the warm-up call changed), then activates the client.
    public func activate(process: JackProcessCallback, context: UnsafeMutableRawPointer,
                         afterWarmUp: () -> Void) throws(JackError) {
        let h = try live()
        precondition(!isActive, "activate called twice on '\(name)'")
        jack_set_process_callback(h, process, context)
        _ = process(jack_get_buffer_size(h), context)
        afterWarmUp()
        if jack_activate(h) != 0 {
            throw JackError(.activateFailed, "cannot activate JACK client '\(name)'")
        }
        isActive = true
        logger.debug("activated", metadata: ["client": "\(name)"])
    }

    /// Activates a client that runs no process callback: it gets its notifications (graph, ports, shutdown) and may
    /// connect ports, but JACK2 leaves a client without a process callback out of its cycle, so it costs no thread
    /// wake-up per period (a session watching the graph for isolated racks: measured 0.03 CPU s per s at period 64
    /// with an empty callback).
    public func activateForNotifications() throws(JackError) {
        let h = try live()
        precondition(!isActive, "activate called twice on '\(name)'")
        if jack_activate(h) != 0 {
            throw JackError(.activateFailed, "cannot activate JACK client '\(name)'")
        }
        isActive = true
        logger.debug("activated without a process callback", metadata: ["client": "\(name)"])
    }

    /// Stops the process callback. After it returns the callback no longer runs.
    /// While the process ends, it waits for the server only so long (`boundClosingCalls`), else the client is
    /// `abandoned`.
    public func deactivate() {
        guard let handle, isActive, !abandoned else { return }
        if !closingCall("jack_deactivate", handle, { _ = jack_deactivate($0) }) { abandoned = true }
        isActive = false
    }

    /// Deactivates and closes the client (its ports disappear from the graph). Safe to call twice, and after the
    /// server has shut the client down. An `abandoned` client is only forgotten: its notification context stays.
    public func close() {
        guard let handle else { return }
        JackClients.unregister(self)
        if notifications.count(.shutdown) == 0 { deactivate() }
        if !abandoned && !closingCall("jack_client_close", handle, { _ = jack_client_close($0) }) { abandoned = true }
        self.handle = nil
        isActive = false
        guard !abandoned else { return }
        notificationContext?.deallocate()
        notificationContext = nil
    }

    /// libjack closed and deleted this client while opening another (`JackClients`): the handle is forgotten
    /// without a call, and the callbacks no longer run (libjack stopped them), so what they reach may go.
    func forgetFreedHandle() {
        guard handle != nil else { return }
        handle = nil
        isActive = false
        freedByLibrary = true
        guard !abandoned else { return }
        notificationContext?.deallocate()
        notificationContext = nil
        logger.debug("freed by libjack after a server loss", metadata: ["client": "\(name)"])
    }

    /// Whether the server has shut this client down (server gone or client kicked out), or libjack freed it after
    /// such a shutdown: either way the client is gone from the graph and its handle with it.
    public var wasShutDown: Bool { notifications.count(.shutdown) > 0 || freedByLibrary }
}
