import Control
import Engine
import Foundation
import Logging

extension RunCommand {
    /// Opens the metrics endpoint on `port` (nil or 0: none). A port that cannot be had stops the run (exit 2): it
    /// was asked for explicitly, and an operator's alerts would otherwise watch nothing.
    func openMetrics(_ session: Session, port: Int?) -> MetricsEndpoint? {
        guard let port, port > 0 else { return nil }
        do {
            return try MetricsEndpoint(session: session, port: port)
        } catch {
            session.close()
            fail(.badInput, "\(error)")
        }
    }
}
