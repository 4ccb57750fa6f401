# bench/overhead/sightline_bin.sh — sourced by the overhead scripts that take
# an optional BUILD_DIR argument (as run_overhead.sh and ab.sh do; a staged GPU
# build): `sightline_bin ROOT [BUILD_DIR]` prints the sightline binary to use:
# $SIGHTLINE_BIN if set (with a note when a BUILD_DIR is given too), else
# BUILD_DIR/tools/sightline/sightline, else ROOT's build/release one. Exits
# the calling script with 2 when BUILD_DIR is not a directory.
sightline_bin() {
  local root=$1 dir=${2:-}
  if [ -n "$dir" ]; then
    [ -d "$dir" ] || { echo "no build directory $dir" >&2; exit 2; }
    if [ -n "${SIGHTLINE_BIN:-}" ]; then
      echo "note: SIGHTLINE_BIN=$SIGHTLINE_BIN is used, not the build directory $dir" >&2
    else
      echo "$(CDPATH= cd -- "$dir" >/dev/null && pwd)/tools/sightline/sightline"
      return
    fi
  fi
  echo "${SIGHTLINE_BIN:-$root/build/release/tools/sightline/sightline}"
}
