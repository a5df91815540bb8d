#!/usr/bin/env bash
# Builds the Debian package from a tree staged by `make install-files PREFIX=/usr DESTDIR=ROOT` (make deb):
#   scripts/build-deb.sh ROOT OUTDIR   ->   OUTDIR/tandem_VERSION_ARCH.deb
# Depends lists the Debian packages of the libraries the binary links, found by dpkg-shlibdeps (dpkg-dev), or where
# that is missing by ldd and dpkg -S (then without version floors).
set -euo pipefail
root=$1
out=$2
bin=$(realpath "$root/usr/bin/tandem")
version=$("$bin" --version)
arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if command -v dpkg-shlibdeps >/dev/null; then
  # dpkg-shlibdeps wants a debian/control beside it; a stub one is enough.
  mkdir -p "$work/debian"
  printf 'Source: tandem\n\nPackage: tandem\nArchitecture: any\n' > "$work/debian/control"
  depends=$(cd "$work" && dpkg-shlibdeps -O "$bin" 2>"$work/shlibdeps.err" | sed -n 's/^shlibs:Depends=//p') || true
  if [ -z "$depends" ]; then cat "$work/shlibdeps.err" >&2; echo "build-deb: dpkg-shlibdeps found nothing" >&2; exit 1; fi
else
  depends=$(ldd "$bin" | awk '/=> \// { print $3 }' | while read -r lib; do
      dpkg -S "$lib" 2>/dev/null || dpkg -S "$(realpath "$lib")" 2>/dev/null || echo "build-deb: no package owns $lib" >&2
    done | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g')
fi

mkdir -p "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: tandem
Version: $version
Architecture: $arch
Maintainer: Tandem maintainers <tandem@localhost>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends, adduser
Recommends: jackd2
Suggests: swh-lv2, x42-plugins
Section: sound
Priority: optional
Description: headless JACK recorder, player and LV2 plugin host
 Tandem records JACK input ports to files and plays files to JACK output ports,
 through LV2 plugin chains, from preset files, without a screen. It counts and
 reports every dropped frame and xrun, keeps files readable after a crash,
 brings the session back when the JACK server restarts, and runs as a systemd
 service (tandem@PRESET.service) with a watchdog tied to the JACK cycles.
CONTROL

# A system user for the unit (User=tandem, Group=audio); the JACK server it joins must run as the same user.
cat > "$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd tandem >/dev/null; then
    adduser --system --group --home /var/lib/tandem --no-create-home --quiet tandem
  fi
  getent group audio >/dev/null && adduser --quiet tandem audio || true
  mkdir -p /etc/tandem/presets
fi
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
exit 0
POSTINST
cat > "$root/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || true; fi
exit 0
POSTRM
chmod 755 "$root/DEBIAN/postinst" "$root/DEBIAN/postrm"
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum > DEBIAN/md5sums)

deb="$out/tandem_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb: $(du -k "$deb" | cut -f1) KiB; Depends: $depends, adduser"
