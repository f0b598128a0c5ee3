#!/usr/bin/env python3
"""Runs a wasm32-wasip1 test binary under wasmtime, as cargo's runner
(CARGO_TARGET_WASM32_WASIP1_RUNNER; `.ci/run` installs the `wasmtime`
package). The binary sees the host's whole file system at `/`, the
environment and its arguments; its exit code is ours, and a trap (an
abort) fails with a traceback.

Not Node's WASI: Node 20 crashed at exit after some of these test binaries
had passed."""
import os
import sys

from wasmtime import Config, Engine, ExitTrap, Linker, Module, Store, WasiConfig

binary, *args = sys.argv[1:]
engine = Engine(Config())
linker = Linker(engine)
linker.define_wasi()
wasi = WasiConfig()
wasi.argv = [binary, *args]
wasi.env = list(os.environ.items())
wasi.preopen_dir("/", "/")
wasi.inherit_stdout()
wasi.inherit_stderr()
store = Store(engine)
store.set_wasi(wasi)
instance = linker.instantiate(store, Module.from_file(engine, binary))
try:
    instance.exports(store)["_start"](store)
    code = 0
except ExitTrap as exit_trap:
    code = exit_trap.code
sys.stdout.flush()
sys.exit(code)
