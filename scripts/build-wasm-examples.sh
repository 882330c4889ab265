#!/bin/sh
# build-wasm-examples.sh builds troupe's example Wasm plugins:
#   notes.wasm   examples/wasm-go-env (Go, through sdk/wasmguest)
#   lbf.wasm     examples/wasm-lbf    (Go, the built-in LBF env; if present)
#   matrix.wasm  examples/c-matrix    (C, against sdk/troupe_plugin.h)
#   lbf_c.wasm   examples/c-lbf       (C, the LBF env ported from envs/lbf)
#
# Usage: scripts/build-wasm-examples.sh [OUTDIR]   (default: bin/wasm)
#
# It installs nothing. It needs Go and, for the C example, clang with the
# wasm32-wasi target, lld, wasi-libc and the wasm32 compiler-rt builtins
# (Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32,
# with the libclang-rt version matching clang's).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$root/bin/wasm"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
CC=${CC:-clang}

die() {
	echo "build-wasm-examples: $*" >&2
	exit 1
}

command -v go >/dev/null 2>&1 || die "go not found in PATH"
command -v "$CC" >/dev/null 2>&1 ||
	die "$CC not found: install clang, lld and wasi-libc (Debian: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)"

# Check the C toolchain for wasm32-wasi with a one-line program, so that a
# missing sysroot, linker or builtins library gets a clear message.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int troupe_probe(void) { return 0; }' >"$probe/p.c"
if ! "$CC" --target=wasm32-wasi -mexec-model=reactor -o "$probe/p.wasm" "$probe/p.c" 2>"$probe/err"; then
	cat "$probe/err" >&2
	die "$CC cannot build for wasm32-wasi (see above): install lld, wasi-libc and the wasm32 compiler-rt builtins (Debian: apt-get install lld wasi-libc libclang-rt-$("$CC" -dumpversion | cut -d. -f1)-dev-wasm32)"
fi

cd "$root"
gobuild() { # gobuild PKG OUT
	echo "go   $1 -> $2"
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o "$2" "$1"
}

gobuild ./examples/wasm-go-env "$out/notes.wasm"
if [ -d examples/wasm-lbf ]; then
	gobuild ./examples/wasm-lbf "$out/lbf.wasm"
fi
echo "clang examples/c-matrix/matrix.c -> $out/matrix.wasm"
"$CC" --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Werror \
	-I sdk -o "$out/matrix.wasm" examples/c-matrix/matrix.c
echo "clang examples/c-lbf/lbf.c -> $out/lbf_c.wasm"
"$CC" --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Werror \
	-I sdk -o "$out/lbf_c.wasm" examples/c-lbf/lbf.c
echo "built into $out"
