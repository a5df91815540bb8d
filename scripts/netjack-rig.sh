#!/usr/bin/env bash
# A two-host NetJACK2 rig on one machine, for tests and for trying a rig by hand (docs/SCALING.md).
#
#   scripts/netjack-rig.sh start DIR [--channels N] [--period P] [--rate R] [--latency L] [--owner PID] [--life S]
#   scripts/netjack-rig.sh exec DIR master|slave COMMAND [ARG...]   run a command on one "host" (pid kept: exec)
#   scripts/netjack-rig.sh link DIR up|down                        the slave's end of the cable
#   scripts/netjack-rig.sh stop-slave DIR | start-slave DIR        the slave's jackd alone (a slave restart)
#   scripts/netjack-rig.sh restart DIR master|slave SECONDS        one host's jackd stops, and starts again SECONDS
#                                                                  later (its clients stay: they see a server loss)
#   scripts/netjack-rig.sh stop DIR                                everything, in order; exit 1 if anything is left
#
# Each "host" is a holder process in its own network namespace and its own mount namespace, with a private tmpfs on
# /dev/shm (JACK keeps its registry, sockets and semaphores there; sharing it would make the two servers clash).
# The namespaces are unnamed (no `ip netns add`): they live exactly as long as a process is in them. A veth pair
# joins them, created directly inside them (it never exists in the caller's namespace), with the rig's own
# addresses 10.213.0.1/30 (master) and 10.213.0.2/30 (slave); no route leads anywhere else, so no packet leaves.
#
# master: jackd -d dummy with N capture and N playback ports, netmanager loaded for unicast on 10.213.0.1.
# slave:  jackd -d net -a 10.213.0.1 (raw float encoding, the default without -O), N ports each way, client
#         name "slave" on the master (ports slave:to_slave_K and slave:from_slave_K there).
# Both servers are named "default" on their own host, so clients run through `exec` need no server name.
#
# Stop order: the slave's clients and jackd first, then netmanager is unloaded, then the master's clients and jackd,
# then the holders. A watcher started with the rig runs `stop` by itself when the owner process (--owner) is gone
# or the rig's life (--life, default 900 s) is over, so a killed test leaves nothing behind either.
set -u

MASTER_ADDR=10.213.0.1
SLAVE_ADDR=10.213.0.2
PREFIX=30
LINK=rig0
SELF=$(readlink -f "$0")

die() { echo "netjack-rig: $*" >&2; exit 2; }

load_state() {
  [ -f "$1/rig.env" ] || die "no rig in $1 (rig.env missing)"
  # shellcheck disable=SC1091
  . "$1/rig.env"
}

holder_of() {
  case "$1" in
    master) echo "$MASTER_HOLDER" ;;
    slave) echo "$SLAVE_HOLDER" ;;
    *) die "host must be master or slave, not '$1'" ;;
  esac
}

# Runs a command inside a host: its network and mount namespaces, this working directory.
in_host() {
  local holder
  holder=$(holder_of "$1")
  shift
  nsenter -t "$holder" -n -m --wd="$PWD" -- env JACK_DEFAULT_SERVER=default JACK_NO_START_SERVER=1 \
    JACK_NO_AUDIO_RESERVATION=1 "$@"
}

# Starts a command inside a host in the background, output appended to $2; $! is the command's own pid (nsenter
# and env exec it).
spawn_in() {
  local holder log=$2
  holder=$(holder_of "$1")
  shift 2
  nsenter -t "$holder" -n -m --wd="$PWD" -- env JACK_DEFAULT_SERVER=default JACK_NO_START_SERVER=1 \
    JACK_NO_AUDIO_RESERVATION=1 "$@" >>"$log" 2>&1 </dev/null &
}

# Whether pid $1 runs (a zombie, exited but not yet reaped by its parent, does not count).
alive() {
  [ -n "${1:-}" ] || return 1
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# Waits up to $2 tenths of a second for pid $1 to end.
wait_gone() {
  local i
  for ((i = 0; i < $2; i++)); do alive "$1" || return 0; sleep 0.1; done
  ! alive "$1"
}

# TERM, then KILL after $2 tenths of a second.
stop_pid() {
  alive "$1" || return 0
  kill -TERM "$1" 2>/dev/null
  wait_gone "$1" "$2" && return 0
  kill -KILL "$1" 2>/dev/null
  wait_gone "$1" 30
}

# Pids of every process in the network namespace $1 (as "net:[inode]"), except the holder $2.
pids_in() {
  local ino=${1#net:[}
  ino=${ino%]}
  stat -L -c '%n %i' /proc/[0-9]*/ns/net 2>/dev/null |
    awk -v ino="$ino" -v skip="/proc/$2/ns/net" '$2 == ino && $1 != skip { split($1, a, "/"); print a[3] }'
}

# Stops every process of a host except its holder and the jackd named in $3 (TERM, then KILL).
stop_clients() {
  local ns=$1 holder=$2 keep=$3 p
  for p in $(pids_in "$ns" "$holder"); do [ "$p" = "$keep" ] || kill -TERM "$p" 2>/dev/null; done
  for p in $(pids_in "$ns" "$holder"); do [ "$p" = "$keep" ] || stop_pid "$p" 30; done
}

start_master() {
  local dir=$1
  load_state "$dir"
  # A master started right after the previous one was stopped can find its server name still active (the old
  # jackd was still telling its clients it was going: "`default' server already active") and exit; it is started
  # again (up to three times) a second later.
  local attempt pid up=0 i
  for attempt in 1 2 3; do
    spawn_in master "$dir/master-jackd.log" jackd $RT -d dummy -r "$RATE" -p "$PERIOD" -C "$CHANNELS" -P "$CHANNELS"
    pid=$!
    sed -i '/^MASTER_JACKD=/d' "$dir/rig.env"
    echo "MASTER_JACKD=$pid" >>"$dir/rig.env"
    for ((i = 0; i < 100; i++)); do
      in_host master jack_lsp >/dev/null 2>&1 && { up=1; break; }
      alive "$pid" || break
      sleep 0.1
    done
    [ $up = 1 ] && break
    alive "$pid" && break   # alive but not answering within 10 s: no point in another
    sleep 1
  done
  if [ $up = 0 ] || ! in_host master jack_load netmanager -i "-a $MASTER_ADDR" >>"$dir/master-jackd.log" 2>&1; then
    echo "netjack-rig: the master did not start:" >&2
    tail -20 "$dir/master-jackd.log" >&2
    return 1
  fi
}

start_slave() {
  local dir=$1
  load_state "$dir"
  # A slave started right after the previous one went can find the master's netmanager still holding it and exit;
  # it is started again (up to three times) a second later.
  local attempt
  for attempt in 1 2 3; do
    spawn_in slave "$dir/slave-jackd.log" jackd $RT -d net -a "$MASTER_ADDR" -n slave -l "$LATENCY" \
      -C "$CHANNELS" -P "$CHANNELS"
    local pid=$!
    sed -i '/^SLAVE_JACKD=/d' "$dir/rig.env"
    echo "SLAVE_JACKD=$pid" >>"$dir/rig.env"
    # Ready when the master lists the slave's ports (the slave has found the master and synced).
    local i
    for ((i = 0; i < 150; i++)); do
      if in_host master jack_lsp 2>/dev/null | grep -q '^slave:to_slave_1$' &&
         in_host slave jack_lsp 2>/dev/null | grep -q '^system:capture_1$'; then
        return 0
      fi
      alive "$pid" || break
      sleep 0.1
    done
    alive "$pid" && break   # alive but not joined within 15 s: no point in another
    sleep 1
  done
  echo "netjack-rig: the slave did not join the master; its log:" >&2
  tail -20 "$dir/slave-jackd.log" >&2
  return 1
}

stop_slave() {
  load_state "$1"
  stop_clients "$SLAVE_NS" "$SLAVE_HOLDER" "${SLAVE_JACKD:-}"
  stop_pid "${SLAVE_JACKD:-}" 50
}

cmd_start() {
  local dir=$1
  shift
  local channels=16 period=256 rate=48000 latency=5 owner="" life=900
  while [ $# -gt 0 ]; do
    case "$1" in
      --channels) channels=$2; shift 2 ;;
      --period) period=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --latency) latency=$2; shift 2 ;;
      --owner) owner=$2; shift 2 ;;
      --life) life=$2; shift 2 ;;
      *) die "unknown option '$1'" ;;
    esac
  done
  for v in "$channels" "$period" "$rate" "$latency" "$life" ${owner:+"$owner"}; do
    [[ "$v" =~ ^[0-9]+$ ]] || die "not a whole number: '$v'"
  done
  [ "$(id -u)" = 0 ] || die "needs root (namespaces, veth)"
  for prog in unshare nsenter ip jackd jack_load jack_unload jack_lsp; do
    command -v "$prog" >/dev/null || die "'$prog' is not installed"
  done
  mkdir -p "$dir" || die "cannot create $dir"
  [ -f "$dir/rig.env" ] && die "a rig already runs in $dir (stop it first)"

  local rt=-r
  chrt -f 1 true 2>/dev/null && rt=-R
  local pids=() host
  for host in master slave; do
    # The holder: its own network and mount namespaces, a private /dev/shm, loopback up; then it only waits.
    # Its sleep is the last resort bound on its life (the watcher stops the rig much earlier).
    unshare --net --mount --propagation private -- sh -c '
      mount -t tmpfs -o size=1g,mode=1777 tandem-rig-shm /dev/shm || exit 1
      ip link set lo up || exit 1
      echo ready > "$1"
      exec sleep "$2"' holder "$dir/$host.ready" "$((life + 60))" </dev/null >>"$dir/holders.log" 2>&1 &
    pids+=($!)
  done
  {
    echo "MASTER_HOLDER=${pids[0]}"
    echo "SLAVE_HOLDER=${pids[1]}"
    echo "CHANNELS=$channels PERIOD=$period RATE=$rate LATENCY=$latency RT=$rt"
  } >"$dir/rig.env"
  local i
  for ((i = 0; i < 50; i++)); do
    [ -f "$dir/master.ready" ] && [ -f "$dir/slave.ready" ] && break
    sleep 0.1
  done
  if ! [ -f "$dir/master.ready" ] || ! [ -f "$dir/slave.ready" ]; then
    echo "netjack-rig: the namespaces could not be made:" >&2
    cat "$dir/holders.log" >&2
    cmd_stop "$dir" >/dev/null
    exit 1
  fi
  {
    echo "MASTER_NS='$(readlink "/proc/${pids[0]}/ns/net")'"
    echo "SLAVE_NS='$(readlink "/proc/${pids[1]}/ns/net")'"
  } >>"$dir/rig.env"

  # The watcher: stops the rig when the owner is gone or the rig's life is over. Own session, so the caller's
  # terminal or process group going away does not take it along before it has cleaned up.
  setsid "$SELF" _watch "$dir" "${owner:-0}" "$life" </dev/null >>"$dir/watcher.log" 2>&1 &
  echo "WATCHER=$!" >>"$dir/rig.env"
  load_state "$dir"

  if ! ip link add "$LINK" netns "$MASTER_HOLDER" type veth peer name "$LINK" netns "$SLAVE_HOLDER" ||
     ! in_host master ip addr add "$MASTER_ADDR/$PREFIX" dev "$LINK" ||
     ! in_host slave ip addr add "$SLAVE_ADDR/$PREFIX" dev "$LINK" ||
     ! in_host master ip link set "$LINK" up || ! in_host slave ip link set "$LINK" up; then
    echo "netjack-rig: the veth pair could not be made" >&2
    cmd_stop "$dir" >/dev/null
    exit 1
  fi

  if ! start_master "$dir"; then
    cmd_stop "$dir" >/dev/null
    exit 1
  fi
  if ! start_slave "$dir"; then
    cmd_stop "$dir" >/dev/null
    exit 1
  fi
  echo "netjack-rig: up in $dir: master $MASTER_ADDR, slave $SLAVE_ADDR, $channels channels each way," \
       "$rate Hz, period $period, network latency $latency periods"
}

cmd_stop() {
  local dir=$1
  [ -f "$dir/rig.env" ] || { echo "netjack-rig: nothing to stop in $dir"; return 0; }
  load_state "$dir"
  if [ -n "${SLAVE_NS:-}" ]; then
    stop_slave "$dir"
  fi
  if alive "${MASTER_JACKD:-}"; then
    timeout 5 nsenter -t "$MASTER_HOLDER" -n -m -- env JACK_DEFAULT_SERVER=default JACK_NO_START_SERVER=1 \
      jack_unload netmanager >>"$dir/master-jackd.log" 2>&1
  fi
  if [ -n "${MASTER_NS:-}" ]; then
    stop_clients "$MASTER_NS" "$MASTER_HOLDER" "${MASTER_JACKD:-}"
  fi
  stop_pid "${MASTER_JACKD:-}" 50
  stop_pid "${MASTER_HOLDER:-}" 20
  stop_pid "${SLAVE_HOLDER:-}" 20
  # Whatever entered a namespace after the holder went (nothing should): the namespaces end with their last process.
  local left="" i ns
  for ((i = 0; i < 50; i++)); do
    left=""
    for ns in ${MASTER_NS:+"$MASTER_NS"} ${SLAVE_NS:+"$SLAVE_NS"}; do left="$left $(pids_in "$ns" "")"; done
    left=$(echo $left)
    [ -z "$left" ] && break
    for p in $left; do kill -KILL "$p" 2>/dev/null; done
    sleep 0.1
  done
  if [ -n "${WATCHER:-}" ] && [ "${WATCHER}" != "${NETJACK_RIG_WATCHER:-}" ]; then stop_pid "$WATCHER" 10; fi
  rm -f "$dir/rig.env" "$dir/master.ready" "$dir/slave.ready"
  if [ -n "$left" ]; then
    echo "netjack-rig: processes left in the rig's namespaces: $left" >&2
    return 1
  fi
  echo "netjack-rig: stopped; no process, namespace, veth or /dev/shm of the rig is left"
}

cmd_watch() {
  local dir=$1 owner=$2 life=$3 i
  for ((i = 0; i < life * 2; i++)); do
    [ -f "$dir/rig.env" ] || exit 0
    if [ "$owner" != 0 ] && ! alive "$owner"; then
      echo "netjack-rig: owner $owner is gone: stopping the rig"
      break
    fi
    sleep 0.5
  done
  [ -f "$dir/rig.env" ] || exit 0
  NETJACK_RIG_WATCHER=$$ cmd_stop "$dir"
}

sub=${1:-}
shift || true
case "$sub" in
  start) [ $# -ge 1 ] || die "usage: start DIR [options]"; cmd_start "$@" ;;
  stop) [ $# -ge 1 ] || die "usage: stop DIR"; cmd_stop "$1" ;;
  exec)
    [ $# -ge 3 ] || die "usage: exec DIR master|slave COMMAND [ARG...]"
    load_state "$1"
    holder=$(holder_of "$2")
    shift 2
    exec nsenter -t "$holder" -n -m --wd="$PWD" -- env JACK_DEFAULT_SERVER=default JACK_NO_START_SERVER=1 \
      JACK_NO_AUDIO_RESERVATION=1 "$@"
    ;;
  link)
    [ $# -ge 2 ] || die "usage: link DIR up|down"
    load_state "$1"
    case "$2" in up | down) in_host slave ip link set "$LINK" "$2" ;; *) die "link: up or down, not '$2'" ;; esac
    ;;
  stop-slave) [ $# -ge 1 ] || die "usage: stop-slave DIR"; stop_slave "$1" ;;
  restart)
    [ $# -ge 3 ] || die "usage: restart DIR master|slave SECONDS"
    [[ "$3" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "not a number of seconds: '$3'"
    load_state "$1"
    case "$2" in
      master) stop_pid "${MASTER_JACKD:-}" 50; sleep "$3"; start_master "$1" ;;
      slave) stop_pid "${SLAVE_JACKD:-}" 50; sleep "$3"; start_slave "$1" ;;
      *) die "restart: master or slave, not '$2'" ;;
    esac
    ;;
  start-slave) [ $# -ge 1 ] || die "usage: start-slave DIR"; start_slave "$1" ;;
  _watch) cmd_watch "$@" ;;
  *) die "usage: start|stop|exec|link|stop-slave|start-slave DIR ... (see the top of $SELF)" ;;
esac
