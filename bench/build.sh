#!/bin/sh
# Builds bench/build/llamabench, bench/build/kvref, bench/build/synthref,
# bench/build/tokref, bench/build/vecdotbench and bench/build/membw against
# the prebuilt llama.cpp that bench/package-lock.json pins. node-llama-cpp ships the shared
# libraries but not the headers; the headers come from the llama.cpp source
# bundle in the same package, so they match the libraries exactly.
# Needs npm (the first time) and gcc. Prints nothing when up to date.
#
# `bench/build.sh llama-server` builds bench/build/llama-server instead, from
# the same source bundle with cmake (apt-get install cmake): the server's own
# sources, linked against the package's prebuilt llama/ggml libraries.
# `bench/build.sh llama-server-native` compiles everything, ggml with
# -DGGML_NATIVE=ON, into bench/build/llama-server-native (hours on 2 shared
# cores).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build="$here/build"
mkdir -p "$build"

if [ ! -d "$here/node_modules/@node-llama-cpp/linux-x64" ]; then
	# --ignore-scripts: the package's postinstall would download or build
	# its own binaries; the prebuilt optional dependency is all we use.
	(cd "$here" && npm ci --ignore-scripts --no-audit --no-fund >&2)
fi
lib="$here/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
bundle="$here/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[ -f "$lib/libllama.v0.4.0.so" ] || { echo "build.sh: no libllama in $lib" >&2; exit 1; }

inc="$build/include"
if [ ! -f "$inc/include/llama.h" ] || [ "$bundle" -nt "$inc/include/llama.h" ]; then
	rm -rf "$build/src.git" "$inc"
	git init -q --bare "$build/src.git"
	git --git-dir="$build/src.git" fetch -q "$bundle" HEAD
	mkdir -p "$inc"
	git --git-dir="$build/src.git" archive FETCH_HEAD include ggml/include | tar -x -C "$inc"
	touch "$inc/include/llama.h"
fi

case "${1:-}" in
llama-server | llama-server-native)
	# The whole source tree of the bundle's commit, configured with cmake
	# (CPU only, native flags, Release, no curl).
	src="$build/llama.cpp"
	if [ ! -f "$src/CMakeLists.txt" ] || [ "$bundle" -nt "$src/CMakeLists.txt" ]; then
		rm -rf "$src"
		mkdir -p "$src"
		git --git-dir="$build/src.git" archive FETCH_HEAD | tar -x -C "$src"
		touch "$src/CMakeLists.txt"
	fi
	cb="$build/llama.cpp-build"
	if [ ! -f "$cb/compile_commands.json" ] || [ "$src/CMakeLists.txt" -nt "$cb/compile_commands.json" ]; then
		cmake -S "$src" -B "$cb" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
			-DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
			-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
	fi
	if [ "$1" = llama-server-native ]; then
		# Everything from source, ggml compiled for this CPU: hours on a
		# loaded 2-core machine, minutes on a free 16-core one.
		cmake --build "$cb" --target llama-server -j "${JOBS:-2}" >&2
		cp "$cb/bin/llama-server" "$build/llama-server-native"
	else
		# Only the server's own sources, linked against the package's
		# prebuilt llama and ggml libraries (see server-build.mjs).
		cmake --build "$cb" --target llama-ui-assets >&2
		node "$here/server-build.mjs" "$cb" "$src" "$lib" "$build/llama-server" "${JOBS:-2}"
	fi
	exit 0
	;;
esac

# libllama_tool NAME builds build/NAME from NAME.c against the package's
# libllama (the C harnesses: llamabench, kvref, synthref, tokref).
libllama_tool() {
	if [ ! -x "$build/$1" ] || [ "$here/$1.c" -nt "$build/$1" ]; then
		gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
			-I"$inc/include" -I"$inc/ggml/include" \
			-DLLAMA_LIB_DIR="\"$lib\"" \
			-o "$build/$1" "$here/$1.c" \
			-L"$lib" -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so \
			-Wl,-rpath,"$lib"
	fi
}
for tool in llamabench kvref synthref tokref; do
	libllama_tool "$tool"
done
# bench/build/vecdotbench (ggml's vec_dot per type) loads a ggml CPU backend
# variant itself (dlopen) and links only ggml-base.
if [ ! -x "$build/vecdotbench" ] || [ "$here/vecdotbench.c" -nt "$build/vecdotbench" ]; then
	gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror \
		-I"$inc/ggml/include" -DLLAMA_LIB_DIR="\"$lib\"" \
		-o "$build/vecdotbench" "$here/vecdotbench.c" \
		-L"$lib" -l:libggml-base.so -Wl,-rpath,"$lib" -ldl -lm
fi
if [ ! -x "$build/membw" ] || [ "$here/membw.c" -nt "$build/membw" ]; then
	gcc -O3 -std=c11 -D_POSIX_C_SOURCE=200809L -march=native -Wall -Wextra -Werror \
		-o "$build/membw" "$here/membw.c" -lpthread
fi
