"""Runs a wasm32-wasip1 program (a test binary) under Wasmtime (the `wasmtime`
package from PyPI, installed by .ci/wasm.sh in a scratch venv), with the host's file
system visible at the same absolute paths (tests find their files through
CARGO_MANIFEST_DIR) and the environment passed through.

Usage: python wasi_runner.py program.wasm [args...]
"""

import sys

import wasmtime


def main() -> int:
    program = sys.argv[1]
    engine = wasmtime.Engine()
    linker = wasmtime.Linker(engine)
    linker.define_wasi()
    store = wasmtime.Store(engine)
    wasi = wasmtime.WasiConfig()
    wasi.argv = sys.argv[1:]
    wasi.inherit_env()
    wasi.inherit_stdin()
    wasi.inherit_stdout()
    wasi.inherit_stderr()
    wasi.preopen_dir("/", "/")
    store.set_wasi(wasi)
    module = wasmtime.Module.from_file(engine, program)
    instance = linker.instantiate(store, module)
    try:
        instance.exports(store)["_start"](store)
    except wasmtime.ExitTrap as e:
        return e.code
    except wasmtime.Trap as e:
        print(f"wasi_runner: {program} trapped: {e}", file=sys.stderr)
        return 134
    return 0


if __name__ == "__main__":
    sys.exit(main())
