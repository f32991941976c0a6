#!/usr/bin/env node
// The `hookstorm` command of the npm package: runs the binary of the
// platform package npm installed beside this one (@hookstorm/<os>-<cpu>,
// an optional dependency only the matching platform installs) with this
// command's arguments, and ends as it ends: its exit code, or the signal
// that killed it. The scenario catalog sits beside that binary (scenarios/),
// where it looks first.
//
// Signals: SIGTERM and SIGHUP are passed on to the binary (once each: a
// second one would mean "stop now, without the reports"). SIGINT is passed
// on only when this process has no terminal: a Ctrl-C at a terminal reaches
// the whole foreground process group, the binary included, and passing it
// on would count as a second one.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

const platformPackage = `@hookstorm/${process.platform}-${process.arch}`;

function binary() {
  let dir;
  try {
    dir = path.dirname(require.resolve(`${platformPackage}/package.json`));
  } catch {
    process.stderr.write(
      `error: ${platformPackage} is not installed, so there is no hookstorm binary for ${process.platform}-${process.arch} ` +
        "(hint: install without --omit=optional / --no-optional; on another platform, " +
        "build hookstorm with cargo: docs/install.md in its repository)\n",
    );
    process.exit(254);
  }
  return path.join(dir, "bin", "hookstorm");
}

function hasTerminal() {
  try {
    fs.closeSync(fs.openSync("/dev/tty", "r"));
    return true;
  } catch {
    return false;
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
const passed = new Set();
const pass = (signal) => {
  if (passed.has(signal) || child.exitCode !== null || child.signalCode !== null) return;
  passed.add(signal);
  child.kill(signal);
};
process.on("SIGTERM", () => pass("SIGTERM"));
process.on("SIGHUP", () => pass("SIGHUP"));
const terminal = hasTerminal();
process.on("SIGINT", () => {
  if (!terminal) pass("SIGINT");
});

child.on("error", (e) => {
  process.stderr.write(`error: cannot run ${child.spawnfile}: ${e.message}\n`);
  process.exit(254);
});
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    // A signal Node will not die of: the shell's convention.
    process.exitCode = 128 + (os.constants.signals[signal] || 0);
    return;
  }
  process.exit(code);
});
