// server-build.mjs compiles llama-server's own sources (tools/server, the
// mtmd library it links, cpp-httplib, the hash vendor code and the UI stub)
// with the exact commands cmake wrote to compile_commands.json, and links
// them against the prebuilt libllama-common, libllama and libggml of the
// pinned node-llama-cpp package (the same commit as the source bundle). It
// exists because a full source build of ggml and llama takes hours on a
// small shared machine; the compute kernels are then the package's
// (its per-CPU ggml-cpu variants, chosen at run time), the ones
// bench/llamabench uses. Called by `bench/build.sh llama-server`.
//
//   node bench/server-build.mjs BUILD_DIR SOURCE_DIR LIB_DIR OUT [JOBS]
//
// The server and HTTP code compile at -O1, the multimodal, hash and UI code
// (not on a text request's path) at -O0: compile time is what is short.
// Objects newer than their source and command are reused.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const [build, src, lib, out, jobsArg] = process.argv.slice(2);
if (!out) {
  console.error("usage: node bench/server-build.mjs BUILD_DIR SOURCE_DIR LIB_DIR OUT [JOBS]");
  process.exit(2);
}
const jobs = Number(jobsArg ?? 2);
const root = resolve(src) + "/";
const wanted = ["tools/server/", "tools/mtmd/", "vendor/cpp-httplib/", "vendor/hash/"];
const unwanted = ["mtmd-cli.cpp", "mtmd-debug.cpp", "deprecation-warning.cpp", "mtmd-helper-gen.cpp"];
const fast = ["tools/server/", "vendor/cpp-httplib/"];

const units = [];
const seen = new Set();
for (const c of JSON.parse(readFileSync(join(build, "compile_commands.json"), "utf8"))) {
  const rel = c.file.startsWith(root) ? c.file.slice(root.length) : null;
  const ui = c.file.endsWith("/tools/ui/ui.cpp");
  if (!ui && (!rel || !wanted.some((w) => rel.startsWith(w)) || unwanted.some((u) => rel.endsWith(u)))) continue;
  if (seen.has(c.file)) continue;
  seen.add(c.file);
  const opt = rel && fast.some((w) => rel.startsWith(w)) ? "-O1" : "-O0";
  const command = c.command.replace(/ -O[0-3s] /, ` ${opt} `);
  const obj = resolve(c.directory, command.match(/ -o (\S+)/)[1]);
  units.push({ dir: c.directory, file: c.file, obj, command });
}

// An object is reused when it is newer than its source and was made by the
// same command (kept beside it).
const stale = units.filter((u) => {
  const cmdFile = u.obj + ".cmd";
  if (!existsSync(u.obj) || !existsSync(cmdFile) || readFileSync(cmdFile, "utf8") !== u.command) return true;
  return statSync(u.obj).mtimeMs < statSync(u.file).mtimeMs;
});
console.error(`server-build: ${units.length} sources, ${stale.length} to compile, ${jobs} at a time`);

let failed = false;
async function worker(queue) {
  for (let u; (u = queue.shift());) {
    mkdirSync(dirname(u.obj), { recursive: true });
    const code = await new Promise((r) => spawn("sh", ["-c", u.command], { cwd: u.dir, stdio: "inherit" }).on("exit", r));
    if (code !== 0) {
      failed = true;
      console.error(`server-build: failed: ${u.file}`);
      return;
    }
    writeFileSync(u.obj + ".cmd", u.command);
    console.error(`server-build: ${u.file.slice(root.length) || u.file}`);
  }
}
const queue = [...stale];
await Promise.all(Array.from({ length: jobs }, () => worker(queue)));
if (failed) process.exit(1);

execFileSync("c++", [
  "-o", out, ...units.map((u) => u.obj),
  "-L" + lib, "-l:libllama-common.so", "-l:libllama.v0.4.0.so", "-l:libggml.v0.4.0.so", "-l:libggml-base.so",
  "-lssl", "-lcrypto", "-lpthread", "-ldl", "-Wl,-rpath," + lib,
], { stdio: "inherit" });
// The package's ggml loads its CPU backend at run time (one library per CPU
// generation, the best this CPU runs), searching the executable's directory.
for (const f of readdirSync(lib).filter((n) => /^libggml-cpu-.*\.so$/.test(n))) {
  const link = join(dirname(out), f);
  rmSync(link, { force: true });
  symlinkSync(join(lib, f), link);
}
console.error(`server-build: linked ${out}`);
