import Engine
import Foundation
import Logging
import Presets

extension Session {
    /// Notes where the player is (called as the server is lost, before the engines are closed).
    func rememberPlayer() {
        guard let p = player, let item = p.position.item else {
            playerResume = nil
            return
        }
        let pos = p.position
        playerResume = PlayerResumePoint(queue: p.queue, item: item, frame: pos.frame, playing: pos.playing)
    }

    /// Cues a player just re-created after a server loss where the old one was (same queue only). Whether it plays
    /// is `playsOnStart`'s answer; the point is dropped once the session is back.
    func cueResumedPlayer() {
        guard let r = playerResume, let p = player else { return }
        guard p.queue == r.queue, r.item < r.queue.count else {
            playerResume = nil
            return
        }
        let logger = Logger(label: "tandem.session")
        if !p.cue(item: r.item, frame: r.frame) {
            logger.warning("the player did not take its resume point in time", metadata: ["item": "\(r.item + 1)"])
        }
        logger.info("player resumes where it was when the server was lost",
                    metadata: ["item": "\(r.item + 1)", "frame": "\(r.frame)", "playing": "\(r.playing)"])
    }

    /// Whether a player created by this apply starts playing at once (start modes `immediately` and `command`; the
    /// transport and the recorder's first take start the others). After a server loss: when it was playing then.
    func playsOnStart(_ mode: PlayerStart?) -> Bool {
        if let r = playerResume, player?.queue == r.queue {
            return r.playing && (mode == .immediately || mode == .command)
        }
        return mode == .immediately
    }
}
