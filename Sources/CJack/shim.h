#ifndef TANDEM_CJACK_SHIM_H
#define TANDEM_CJACK_SHIM_H

#include <jack/jack.h>
#include <jack/types.h>
#include <jack/transport.h>
#include <jack/midiport.h>
#include <jack/statistics.h>
#include <jack/session.h>   // jack_client_get_uuid
#include <jack/midiport.h>  // JackMIDIBuffer

/// `jack_client_open` is variadic, which Swift cannot call. This fixed-arity wrapper always passes a server
/// name (JackServerName must be in `options`; a NULL `server_name` means the default server).
static inline jack_client_t *tandem_jack_client_open(const char *client_name, jack_options_t options,
                                                      jack_status_t *status, const char *server_name) {
    if (server_name != NULL) {
        return jack_client_open(client_name, (jack_options_t)(options | JackServerName), status, server_name);
    }
    return jack_client_open(client_name, options, status);
}

#include <sys/prctl.h>
#include <signal.h>

/// `prctl` is variadic too. Asks the kernel to send this process `sig` when the thread that started it ends (a
/// child of the session: see `ChildProcess.endWithParent`). Returns prctl's result.
static inline int tandem_set_parent_death_signal(int sig) {
    return prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0UL, 0UL, 0UL);
}

#endif
