#!/usr/bin/env bash
# Installs the C library from build/ into a temporary prefix and builds the consumer of
# tests/install/ against it four ways: find_package and pkg-config, each with the shared
# and the static library; runs each and checks which library it linked. Removes the prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SCANFORGE_BUILD_DIR:-build}
if [ -f "$build/CMakeCache.txt" ]; then
  cmake --build "$build" -j"$(nproc)" >/dev/null
else
  bash scripts/build.sh
fi
prefix=$(mktemp -d /tmp/scanforge-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name scanforge.pc)
libdir=$(dirname "$(dirname "$pc")")
[ -x "$prefix/bin/scanforge" ] || { echo "test-install: no bin/scanforge in the prefix" >&2; exit 1; }
"$prefix/bin/scanforge" --help >/dev/null

# $1: the consumer; $2: shared or static. Runs it; the shared one must load the installed
# libscanforge.so, the static one no libscanforge.so at all.
run_consumer() {
  local found
  found=$(ldd "$1" | awk '/libscanforge\.so/{print $3}')
  if [ "$2" = shared ] && [ "$found" != "$(realpath "$libdir/libscanforge.so.0.1")" ] && [ "$found" != "$libdir/libscanforge.so.0.1" ]; then
    echo "test-install: $1 loads '${found:-no libscanforge.so}', not $libdir/libscanforge.so.0.1" >&2; exit 1
  fi
  if [ "$2" = static ] && [ -n "$found" ]; then
    echo "test-install: $1 should not load libscanforge.so (it does: $found)" >&2; exit 1
  fi
  "$1"
}

for kind in shared static; do
  static=OFF; [ "$kind" = static ] && static=ON
  cmake -S tests/install -B "$prefix/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DSCANFORGE_USE_STATIC_LIBS="$static" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$prefix/cmake-$kind" >/dev/null
  echo "find_package, $kind:"
  run_consumer "$prefix/cmake-$kind/consumer" "$kind"
done

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc=${CC:-cc}
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
"$cc" -std=c11 tests/install/consumer.c -o "$prefix/pc-shared" $(pkg-config --cflags --libs scanforge) \
      -lm -Wl,-rpath,"$libdir"
echo "pkg-config, shared:"
run_consumer "$prefix/pc-shared" shared
# Static, as README.md shows: the archive by its file name, and what --static adds.
# shellcheck disable=SC2046
"$cc" -std=c11 tests/install/consumer.c -o "$prefix/pc-static" $(pkg-config --cflags scanforge) \
      $(pkg-config --libs --static scanforge | sed 's/-lscanforge/-l:libscanforge.a/')
echo "pkg-config, static:"
run_consumer "$prefix/pc-static" static
echo "test-install: the installed library works through find_package and pkg-config, shared and static"
