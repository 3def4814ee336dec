// Runs the wasm32-wasip1 build of the offline core under Node's WASI:
//   node cross/wasi-run.mjs target/wasm32-wasip1/release/ripe-cidr-collector.wasm DIR -- ARGS...
// DIR is mapped to /data inside the sandbox and passed as --data-dir.
import { readFile } from "node:fs/promises";
import { WASI } from "node:wasi";
import { argv, env, exit } from "node:process";

const [wasmPath, dir, sep, ...args] = argv.slice(2);
if (!wasmPath || !dir || sep !== "--") {
  console.error("usage: node cross/wasi-run.mjs FILE.wasm DIR -- ARGS...");
  exit(2);
}
const wasi = new WASI({
  version: "preview1",
  args: ["ripe-cidr-collector", "--data-dir", "/data", ...args],
  env: { RUST_BACKTRACE: env.RUST_BACKTRACE ?? "" },
  preopens: { "/data": dir },
  returnOnExit: true,
});
const module = await WebAssembly.compile(await readFile(wasmPath));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
exit(wasi.start(instance));
