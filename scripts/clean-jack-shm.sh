#!/usr/bin/env bash
# JACK2 keeps a registry of servers in shared memory with 8 slots. A server that dies without unregistering
# (SIGKILL, a crash) keeps its slot until a server of the same name starts again, so a machine that has seen a few
# crashed private servers can refuse new ones ("Too many servers already active"). When no jackd runs at all, the
# registry and the servers' leftovers are stale and safe to remove; otherwise this does nothing.
set -u
# Zombies (exited, not yet reaped) hold nothing; only live servers count.
if ps -C jackd,jackdbus -o stat= 2>/dev/null | grep -qv '^Z'; then
  echo "clean-jack-shm: a JACK server is running; leaving its shared memory alone"
  exit 0
fi
shopt -s nullglob
stale=(/dev/shm/jack-shm-registry /dev/shm/jack-[0-9]* /dev/shm/jack_* /dev/shm/jack_db-*)
if [ ${#stale[@]} -gt 0 ]; then
  rm -rf "${stale[@]}" 2>/dev/null && echo "clean-jack-shm: removed ${#stale[@]} stale JACK shared-memory entries"
fi
exit 0
