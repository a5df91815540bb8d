#ifndef TANDEM_LADSPAHOST_H
#define TANDEM_LADSPAHOST_H

/*
 * LADSPA and DSSI plugins, hosted through the same process-thread code as LV2 plugins.
 *
 * A library is opened once (dlopen) and never closed: a plugin may leave threads or atexit handlers behind. Each
 * instance is wrapped in a struct laid out as lilv's LilvInstance ({descriptor, handle, pimpl}) whose descriptor is
 * an LV2_Descriptor of trampolines: connect_port, activate, run, deactivate go to the LADSPA descriptor, with the
 * port index and frame count widened to unsigned long. A DSSI synth gets one more port, index `port count`, an
 * LV2 atom sequence of MIDI events: run turns its events into ALSA sequencer events for run_synth (program changes
 * into select_program, mapped controllers into their control ports). The chain connects and runs the wrapper as it
 * would an LV2 instance (never with lilv_instance_free: use ladspahost_free).
 */

#include <stdint.h>
#include <stddef.h>
#include <ladspa.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct LADSPAHostLibrary LADSPAHostLibrary;

/* Opens a LADSPA or DSSI library. NULL with the loader's words (or "no ladspa_descriptor or dssi_descriptor") in
   `error` when it cannot be used. Control thread. */
LADSPAHostLibrary *ladspahost_open(const char *path, char *error, size_t error_size);
/* Whether the library is a DSSI one (it has dssi_descriptor). */
int ladspahost_is_dssi(const LADSPAHostLibrary *library);
/* The LADSPA descriptor of plugin `index` (of a DSSI library: its LADSPA_Plugin), NULL past the last. At most 4096. */
const LADSPA_Descriptor *ladspahost_descriptor(const LADSPAHostLibrary *library, unsigned long index);
/* For a DSSI plugin: 1 when it takes MIDI (run_synth or run_multiple_synths), 0 otherwise. */
int ladspahost_takes_midi(const LADSPAHostLibrary *library, unsigned long index);
/* For a DSSI plugin: 1 when it has configure(). */
int ladspahost_has_configure(const LADSPAHostLibrary *library, unsigned long index);

/* An instance: a LilvInstance-shaped struct (see above). NULL when the plugin's instantiate returned NULL.
   `midi_urid`: the URID of midi:MidiEvent; `atom_capacity`: bytes of the MIDI port's buffer. */
void *ladspahost_instantiate(const LADSPAHostLibrary *library, unsigned long index, unsigned long sample_rate,
                             uint32_t midi_urid, uint32_t atom_capacity);
/* Connects a port (as the chain does through the wrapper's descriptor). */
void ladspahost_connect(void *instance, uint32_t port, void *data);
/* Calls the plugin's cleanup and frees the wrapper. The plugin must be deactivated (or never activated). */
void ladspahost_free(void *instance);

/* DSSI programs: the count (0 for a plain LADSPA plugin), and the one at `i` (its name valid until the next call
   on this instance). Control thread, while the instance is not run. */
unsigned long ladspahost_program_count(void *instance);
int ladspahost_program(void *instance, unsigned long i, unsigned long *bank, unsigned long *program, const char **name);
/* Selects a program at the start of the next run (or now, when `now` is set: the instance must not be running).
   Realtime: safe. */
void ladspahost_select_program(void *instance, unsigned long bank, unsigned long program, int now);
/* The last program selected (from MIDI or by ladspahost_select_program): 1 and bank/program, or 0 for none. */
int ladspahost_selected_program(void *instance, unsigned long *bank, unsigned long *program);
/* DSSI configure(key, value): NULL on success, otherwise a message the caller frees with free(). Control thread,
   while the instance is not run (DSSI lets configure run beside run_synth only for the plugin's own locking). */
char *ladspahost_configure(void *instance, const char *key, const char *value);
/* The MIDI controller a DSSI plugin maps to control port `port`: a CC number 0-127, or -1. */
int ladspahost_midi_controller(void *instance, unsigned long port);
/* MIDI events dropped because more than the wrapper's event buffer arrived in one cycle. */
uint64_t ladspahost_events_dropped(void *instance);

#ifdef __cplusplus
}
#endif
#endif
