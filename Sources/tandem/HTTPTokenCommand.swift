import ArgumentParser
import Foundation
import WebAPI

/// `tandem http-token`: the bearer token an HTTP API bound to anything but loopback asks for (made on first use,
/// kept in a file only its owner may read).
struct HTTPTokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http-token",
        abstract: "Print the HTTP API's bearer token (made on first use), or where it is kept.",
        discussion: """
            The token is kept in $XDG_CONFIG_HOME/tandem/http-token (else ~/.config/tandem/http-token), mode 600. \
            Remove the file and restart Tandem to make a new one.
            """)

    @Flag(name: .long, help: "Print the file's path instead of the token.")
    var path = false

    func run() throws {
        if path {
            say(HTTPAccess.tokenPath)
            return
        }
        do {
            say(try HTTPAccess.loadOrCreateToken())
        } catch {
            fail(.badInput, "\(error)")
        }
    }
}
