import CLilv
import Foundation
import LADSPAHost
import LV2Host
import Presets
import Realtime

// Building: the buffers, options and features a chain allocates, and each plugin's instances with their ports
// connected. Runs on the control thread, inside `host.locked` where a function says so.
extension PluginChain {
    func zeroed(_ count: Int) -> UnsafeMutablePointer<Float> {
        let p = UnsafeMutablePointer<Float>.allocate(capacity: count)
        p.initialize(repeating: 0, count: count)
        cleanups.append { p.deallocate() }
        return p
    }

    /// `channels` delay lines of `dryCapacity` frames, silent.
    func delayLines(channels: Int) -> DelayLines {
        let buffers = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: max(1, channels))
        for c in 0..<channels { (buffers + c).initialize(to: zeroed(Self.dryCapacity)) }
        // No lines: capacity 0, and the process thread never touches the buffers.
        let position = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        position.initialize(to: 0)
        cleanups.append {
            buffers.deallocate()
            position.deallocate()
        }
        return DelayLines(buffers: buffers, channels: channels, capacity: channels > 0 ? Self.dryCapacity : 0,
                          position: position)
    }

    private func cString(_ s: String) -> UnsafePointer<CChar> {
        let p = strdup(s)!
        cleanups.append { free(p) }
        return UnsafePointer(p)
    }

    /// The options every instance gets: sample rate, block lengths, atom sequence size.
    static func options(host: PluginHost, sampleRate: Int, period: Int)
        -> (UnsafeMutablePointer<LV2_Options_Option>, UnsafeMutableRawPointer) {
        let values = UnsafeMutableRawPointer.allocate(byteCount: 32, alignment: 8)
        values.storeBytes(of: Float(sampleRate), toByteOffset: 0, as: Float.self)
        values.storeBytes(of: Int32(1), toByteOffset: 4, as: Int32.self)
        values.storeBytes(of: Int32(maxBlock), toByteOffset: 8, as: Int32.self)
        values.storeBytes(of: Int32(period), toByteOffset: 12, as: Int32.self)
        values.storeBytes(of: Int32(atomCapacity), toByteOffset: 16, as: Int32.self)
        let float = host.urid(LV2.atomFloat), int = host.urid(LV2.atomInt)
        let entries: [(String, Int, UInt32, UInt32)] = [
            (LV2.sampleRate, 0, 4, float), (LV2.minBlockLength, 4, 4, int), (LV2.maxBlockLength, 8, 4, int),
            (LV2.nominalBlockLength, 12, 4, int), (LV2.sequenceSize, 16, 4, int),
        ]
        let options = UnsafeMutablePointer<LV2_Options_Option>.allocate(capacity: entries.count + 1)
        for (i, e) in entries.enumerated() {
            (options + i).initialize(to: LV2_Options_Option(
                context: LV2_OPTIONS_INSTANCE, subject: 0, key: host.urid(e.0), size: e.2, type: e.3,
                value: UnsafeRawPointer(values + e.1)))
        }
        (options + entries.count).initialize(to: LV2_Options_Option(
            context: LV2_OPTIONS_INSTANCE, subject: 0, key: 0, size: 0, type: 0, value: nil))
        return (options, values)
    }

    /// Bytes of every atom port's buffer (the header included): room for about 340 three-byte MIDI events per
    /// cycle, more when a port's rsz:minimumSize asks (up to `atomCapacityLimit`).
    static let atomCapacity = 8192
    static let atomCapacityLimit = 1 << 20

    /// The buffer size for the atom ports of a plugin: `atomCapacity`, or the largest rsz:minimumSize its ports ask
    /// for (rounded up to 8, at most `atomCapacityLimit`).
    static func atomBufferSize(_ info: PluginInfo) -> Int {
        let asked = info.ports.filter { $0.kind == .atom }.compactMap(\.minimumSize).max() ?? 0
        return min(atomCapacityLimit, max(atomCapacity, (asked + 7) & ~7))
    }

    /// Call inside `host.locked`.
    func build(_ spec: PluginSpec, info: PluginInfo, plugin: HostedPlugin, layout: ChainLayout.Stage,
                       options: UnsafeMutablePointer<LV2_Options_Option>) throws(PluginError) -> Stage {
        let stage = Stage(spec: spec, info: info, source: plugin, layout: layout, sampleRate: sampleRate)
        let instanceCount = layout.instances
        let usesWorker = info.extensionData.contains(LV2.workerInterface)
            || info.requiredFeatures.contains(LV2.workerSchedule) || info.optionalFeatures.contains(LV2.workerSchedule)
        let mentions = Set(info.requiredFeatures + info.optionalFeatures)
        let fixed = fixedBlock && mentions.contains(LV2.fixedBlockLength)
        let powerOf2 = fixedBlock && mentions.contains(LV2.powerOf2BlockLength) && period > 0 && period & (period - 1) == 0
        let controls = AtomicCounterArray.allocate(count: max(1, stage.controls.count))
        let outputs = AtomicCounterArray.allocate(count: max(1, stage.outputs.count))
        let bypass = AtomicCounter.allocate(spec.bypass ? 1 : 0)
        cleanups.append {
            controls.deallocate()
            outputs.deallocate()
            bypass.deallocate()
        }
        for (k, port) in stage.controls.enumerated() {
            controls.store(k, Int((port.defaultValue ?? port.minimum ?? 0).bitPattern))
        }
        let instances = UnsafeMutablePointer<InstanceState>.allocate(capacity: instanceCount)
        cleanups.append { instances.deallocate() }
        let sequence = host.urid(LV2.atomSequence), chunk = host.urid(LV2.atomChunk)
        for i in 0..<instanceCount {
            let worker = usesWorker ? lv2host_worker_new(1 << 16) : nil
            let log = lv2host_log_new(host.urids, "\(label)/\(spec.name)")
            cleanups.append { lv2host_log_free(log) }
            var list: [(String, UnsafeMutableRawPointer?)] = [
                (LV2.uridMap, UnsafeMutableRawPointer(host.map)), (LV2.uridUnmap, UnsafeMutableRawPointer(host.unmap)),
                (LV2.options, UnsafeMutableRawPointer(options)), (LV2.boundedBlockLength, nil),
                (LV2.log, log.map { UnsafeMutableRawPointer(lv2host_log_feature($0)) }), (LV2.loadDefaultState, nil),
            ]
            if fixed { list.append((LV2.fixedBlockLength, nil)) }
            if powerOf2 { list.append((LV2.powerOf2BlockLength, nil)) }
            if let worker { list.append((LV2.workerSchedule, UnsafeMutableRawPointer(lv2host_worker_schedule_feature(worker)))) }
            let featureStructs = UnsafeMutablePointer<LV2_Feature>.allocate(capacity: list.count)
            let features = UnsafeMutablePointer<UnsafePointer<LV2_Feature>?>.allocate(capacity: list.count + 1)
            for (k, f) in list.enumerated() {
                (featureStructs + k).initialize(to: LV2_Feature(URI: cString(f.0), data: f.1))
                (features + k).initialize(to: UnsafePointer(featureStructs + k))
            }
            (features + list.count).initialize(to: nil)
            cleanups.append {
                featureStructs.deallocate()
                features.deallocate()
            }
            let made: UnsafeMutablePointer<LilvInstance>?
            switch plugin {
            case .lv2(let p): made = lilv_plugin_instantiate(p, Double(sampleRate), features)
            case .ladspa(let p):
                made = ladspahost_instantiate(p.library, p.index, UInt(sampleRate), host.urid(LV2.midiEvent),
                                              UInt32(Self.atomBufferSize(info)))?.assumingMemoryBound(to: LilvInstance.self)
            }
            guard let instance = made else {
                if let worker { lv2host_worker_free(worker) }
                stage.free(activated: false)
                let why: String
                switch plugin {
                case .lv2(let p): why = Self.whyNoInstance(p, uri: spec.uri)
                case .ladspa: why = "the plugin's instantiate returned nothing (its own messages, if any, are above)"
                }
                throw PluginError(.instantiateFailed, plugin: spec.name, "<\(spec.uri)> failed to instantiate: " + why)
            }
            stage.instances.append(instance)
            stage.features.append(features)
            if let worker {
                stage.workers.append(worker)
                let iface = lilv_instance_get_extension_data(instance, LV2.workerInterface)
                if lv2host_worker_start(worker, lilv_instance_get_handle(instance),
                                        iface?.assumingMemoryBound(to: LV2_Worker_Interface.self)) != 0 {
                    problems.append(PluginError(.worker, plugin: spec.name,
                                                "<\(spec.uri)> asks for a worker but has no worker interface; scheduled work is dropped"))
                }
            }
            let perInstanceOut = layout.outputs.count
            instances.advanced(by: i).initialize(to: connectInstance(
                instance, stage: stage, first: i * layout.mainInputs.count, firstOutput: i * perInstanceOut,
                worker: worker, sequence: sequence, chunk: chunk))
        }
        let latencyOutput = stage.outputs.firstIndex(where: \.reportsLatency) ?? -1
        let enabled = stage.controls.firstIndex { $0.designation == LV2.enabled } ?? -1
        let fade = zeroed(1)
        fade.pointee = spec.bypass && enabled < 0 ? 1 : 0
        let midiBypassed = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        midiBypassed.initialize(to: spec.bypass ? 1 : 0)
        let seen = UnsafeMutablePointer<Int>.allocate(capacity: stage.controls.count + 1)
        seen.initialize(repeating: 0, count: stage.controls.count + 1)
        let ramps = AtomicCounterArray.allocate(count: stage.controls.count + 1)
        let glides = UnsafeMutablePointer<Glide>.allocate(capacity: max(1, stage.controls.count))
        glides.initialize(repeating: Glide(), count: max(1, stage.controls.count))
        let pending = UnsafeMutablePointer<Int>.allocate(capacity: max(1, stage.controls.count))
        pending.initialize(repeating: StageState.noPending, count: max(1, stage.controls.count))
        let scales = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, stage.controls.count))
        scales.initialize(repeating: 0, count: max(1, stage.controls.count))
        for (k, port) in stage.controls.enumerated() { scales[k] = ControlScale.of(port).rawValue }
        let crossfade = UnsafeMutablePointer<StageFade>.allocate(capacity: 1)
        crossfade.initialize(to: StageFade())
        cleanups.append {
            midiBypassed.deallocate()
            seen.deallocate()
            ramps.deallocate()
            glides.deallocate()
            pending.deallocate()
            scales.deallocate()
            crossfade.deallocate()
        }
        let takesMIDI = info.ports.contains { $0.kind == .atom && $0.isInput && $0.supportsMIDI }
        let timing = AtomicCounterArray.allocate(count: StageTiming.Cell.allCases.count)
        cleanups.append { timing.deallocate() }
        stage.rt = StageState(instances: instances, instanceCount: instanceCount, ins: layout.mainInputs.count,
                              sides: layout.sideInputs.count, outs: layout.outputs.count, widthIn: layout.widthIn,
                              widthOut: layout.widthOut, controls: controls, controlCount: stage.controls.count,
                              outputs: outputs, outputCount: stage.outputs.count, latencyOutput: latencyOutput,
                              enabledControl: enabled, bypass: bypass, fade: fade, ramps: ramps, glides: glides,
                              pending: pending, scales: scales, crossfade: crossfade,
                              dry: delayLines(channels: latencyOutput >= 0 && enabled < 0 ? layout.widthOut : 0),
                              fixedFrames: fixed ? period : 0, firstSide: 0,
                              midiChannels: spec.midiChannel.map { UInt32(1) << UInt32($0 - 1) } ?? 0xFFFF,
                              takesMIDI: takesMIDI,
                              takesTime: info.ports.contains { $0.kind == .atom && $0.isInput && $0.supportsTime },
                              midiBypassed: midiBypassed, timing: timing,
                              budgetPerFrame: Int(StageTiming.budgetShare * 1e9 * 1024 / Double(max(1, sampleRate))),
                              seen: seen)
        if case .ladspa(let p) = plugin, p.takesMIDI { stage.rt.writesInputs = true }
        stage.rt.slices = !fixed && !info.ports.contains { $0.kind == .atom || $0.kind == .cv }
            && (layout.mainInputs.count + layout.outputs.count) > 0
        return stage
    }

    /// Connects the ports that never move (controls, atoms, CV) and returns the instance's process-thread view.
    private func connectInstance(_ instance: UnsafeMutablePointer<LilvInstance>, stage: Stage, first: Int,
                                 firstOutput: Int, worker: OpaquePointer?, sequence: UInt32,
                                 chunk: UInt32) -> InstanceState {
        let info = stage.info, layout = stage.layout
        let audioIn = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.mainInputs.count))
        let sideIn = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.sideInputs.count))
        let audioOut = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, layout.outputs.count))
        for (k, p) in layout.mainInputs.enumerated() { audioIn[k] = UInt32(p) }
        for (k, p) in layout.sideInputs.enumerated() { sideIn[k] = UInt32(p) }
        for (k, p) in layout.outputs.enumerated() { audioOut[k] = UInt32(p) }
        let controlValues = zeroed(max(1, stage.controls.count))
        let outputValues = zeroed(max(1, stage.outputs.count))
        let atomPorts = info.ports.filter { $0.kind == .atom }.sorted { ($0.isInput ? 0 : 1, $0.index) < ($1.isInput ? 0 : 1, $1.index) }
        let atoms = UnsafeMutablePointer<UnsafeMutableRawPointer>.allocate(capacity: max(1, atomPorts.count))
        let atomFlags = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, atomPorts.count))
        atomFlags.initialize(repeating: 0, count: max(1, atomPorts.count))
        for (k, p) in atomPorts.enumerated() {
            atomFlags[k] = (p.supportsMIDI ? AtomFlag.midi : 0) | (p.supportsTime && p.isInput ? AtomFlag.time : 0)
        }
        let atomSize = Self.atomBufferSize(info)
        cleanups.append {
            atomFlags.deallocate()
            audioIn.deallocate()
            sideIn.deallocate()
            audioOut.deallocate()
            atoms.deallocate()
        }
        for port in info.ports {
            let index = UInt32(port.index)
            switch port.kind {
            case .audio:
                break   // connected every cycle (`ChainState.runStage`)
            case .control:
                if port.isInput, let k = stage.controlIndex(port.symbol) {
                    controlValues[k] = port.defaultValue ?? 0
                    lilv_instance_connect_port(instance, index, controlValues + k)
                } else if let k = stage.outputs.firstIndex(where: { $0.index == port.index }) {
                    lilv_instance_connect_port(instance, index, outputValues + k)
                }
            case .cv:
                // Inputs: silence until a side input connects them each cycle; outputs: a buffer of their own.
                let buffer = zeroed(Self.maxBlock)
                lilv_instance_connect_port(instance, index, buffer)
                if !port.isInput { stage.cvOutputs.append(buffer) }
            case .atom:
                let k = atomPorts.firstIndex { $0.index == port.index }!
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: atomSize, alignment: 8)
                buffer.initializeMemory(as: UInt8.self, repeating: 0, count: atomSize)
                cleanups.append { buffer.deallocate() }
                (atoms + k).initialize(to: buffer)
                lilv_instance_connect_port(instance, index, buffer)
            case .other:
                lilv_instance_connect_port(instance, index, nil)
            }
        }
        let descriptor = instance.pointee.lv2_descriptor.pointee
        return InstanceState(
            handle: instance.pointee.lv2_handle, connect: descriptor.connect_port!, run: descriptor.run!,
            audioIn: audioIn, sideIn: sideIn, audioOut: audioOut, firstChannel: first, firstOutput: firstOutput,
            controlValues: controlValues,
            outputValues: outputValues, atoms: atoms, atomFlags: atomFlags, atomInputs: atomPorts.filter(\.isInput).count,
            atomCount: atomPorts.count, atomCapacity: UInt32(atomSize), sequenceURID: sequence,
            chunkURID: chunk, worker: worker)
    }
}
