#!/usr/bin/env bash
# Tandem on both hosts of a NetJACK2 rig at a channel count, period and length of your choosing (by hand, not in
# CI; docs/SCALING.md has the figures it measured). Each host plays a looping noise file into the network and
# records what arrives from the other one:
#
#   master: tandem play  -> slave:to_slave_*     tandem record <- slave:from_slave_*
#   slave:  tandem play  -> system:playback_*    tandem record <- system:capture_*
#
#   scripts/netjack-measure.sh [CHANNELS [PERIOD [SECONDS [LATENCY]]]]      default 48 256 60 5
#
# Prints each take's and player's counts, the servers' xrun lines, and whether channels 1 and CHANNELS of each take
# continue the looping source without a break (after its first sound). Needs a built tandem (.build/debug or
# $TANDEM), root, sox and python3. The rig stops by itself at the end or if this script dies.
set -u
CH=${1:-48} PERIOD=${2:-256} SECS=${3:-60} LAT=${4:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=${TANDEM:-$ROOT/.build/debug/tandem}
RIG=$ROOT/scripts/netjack-rig.sh
W=$(mktemp -d /tmp/tandem-netjack-measure-XXXXXX)
R=$W/rig
trap '"$RIG" stop "$R" >/dev/null 2>&1' EXIT
"$RIG" start "$R" --channels "$CH" --period "$PERIOD" --latency "$LAT" --owner $$ --life $((SECS + 300)) || exit 1
sox -R -n -r 48000 -c "$CH" -b 24 "$W/noise.wav" synth 10 whitenoise vol 0.5 2>/dev/null || exit 1
sleep 1
"$RIG" exec "$R" master "$T" record -c "$CH" --connect 'slave:from_slave_.*' -d "$W" --session master \
  --sample int24 -t "$SECS" >"$W/master-rec.log" 2>&1 &
MR=$!
"$RIG" exec "$R" slave "$T" record -c "$CH" --connect 'system:capture_.*' -d "$W" --session slave \
  --sample int24 -t "$SECS" >"$W/slave-rec.log" 2>&1 &
SR=$!
sleep 1
"$RIG" exec "$R" master "$T" play --client m-play "$W/noise.wav" --loop item --connect 'slave:to_slave_.*' \
  >"$W/master-play.log" 2>&1 &
MP=$!
"$RIG" exec "$R" slave "$T" play --client s-play "$W/noise.wav" --loop item --connect 'system:playback_.*' \
  >"$W/slave-play.log" 2>&1 &
SP=$!
for ((i = 0; i < SECS + 30; i++)); do
  kill -0 $MR 2>/dev/null || kill -0 $SR 2>/dev/null || break
  sleep 1
done
kill -TERM $MP $SP 2>/dev/null
wait $MR $SR $MP $SP 2>/dev/null
echo "== $CH channels each way, period $PERIOD, network latency $LAT, $SECS s take on each host ($W)"
for f in master-rec slave-rec master-play slave-play; do
  echo "-- $f: $(grep -E 'ENDED|duration reached|stopped|finished:|server lost' "$W/$f.log" | grep -v ' info ' | tail -1)"
done
echo "-- master jackd: $(grep -c 'XRun' "$R/master-jackd.log") xrun lines; slave jackd: $(grep -c 'XRun' "$R/slave-jackd.log") xrun lines"
python3 - "$W" "$CH" <<'EOF'
import array, glob, subprocess, sys
w, ch = sys.argv[1], int(sys.argv[2])
def channel(path, c):
    a = array.array('f')
    a.frombytes(subprocess.run(['sox', path, '-t', 'f32', '-', 'remix', str(c)], capture_output=True).stdout)
    return a
for take in sorted(glob.glob(w + '/master-*.wav')) + sorted(glob.glob(w + '/slave-*.wav')):
    for c in (1, ch):
        src, rec = channel(w + '/noise.wav', c), channel(take, c)
        first = next((i for i, v in enumerate(rec) if v != 0), None)
        if first is None:
            print(take, 'channel', c, 'silent'); continue
        pos = {}
        for i, v in enumerate(src): pos.setdefault(v, i)
        p = pos.get(rec[first]); breaks = 0; n = len(src); i = first
        while i < len(rec) and p is not None:
            if rec[i] == src[p]:
                i += 1; p = (p + 1) % n; continue
            breaks += 1
            p = pos.get(rec[i])
            if p is None:
                break
        print('%s channel %d: from frame %d, %d frames checked, %d breaks%s' % (take.split('/')[-1], c, first,
              i - first, breaks, '' if p is not None else ' (then a sample not in the source)'))
EOF
