// Start a real `credence serve --port 0` for a test, read the CREDENCE_URL= line, stop it after.
import { spawn } from "node:child_process";
import { mkdtempSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The Python that runs the sidecar: $CREDENCE_PYTHON, else the repository's .venv. */
export function python() {
  if (process.env.CREDENCE_PYTHON) return process.env.CREDENCE_PYTHON;
  const venv = join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

// The temporary directories this test process made. A test may stop a sidecar and start another
// on the same database (a restart), so a directory outlives its sidecar and goes when the
// process exits.
const made = [];
process.once("exit", () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A new temporary directory, removed when the test process exits. */
export function tempDir(prefix = "credence-js-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Start a sidecar; resolves with {url, port, db, stop()} once it printed its URL. */
export function startSidecar({ db, port = 0, args = [] } = {}) {
  db ??= join(tempDir(), "x.db");
  const proc = spawn(
    python(),
    ["-m", "sidecar.cli", "serve", "--port", String(port), "--db", db, "--log-level", "WARNING", ...args],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolvePromise, reject) => {
    const lines = createInterface({ input: proc.stdout });
    const timer = setTimeout(() => reject(new Error("credence serve printed no URL in 30 s")), 30000);
    proc.once("exit", (code) => reject(new Error(`credence serve exited (${code}) before its URL`)));
    lines.once("line", (line) => {
      clearTimeout(timer);
      if (!line.startsWith("CREDENCE_URL=")) return reject(new Error(`unexpected line: ${line}`));
      const url = line.slice("CREDENCE_URL=".length);
      const stop = () =>
        new Promise((done) => {
          if (proc.exitCode !== null) return done(proc.exitCode);
          proc.once("exit", (code) => done(code));
          proc.kill("SIGTERM");
        });
      resolvePromise({ url, port: Number(new URL(url).port), db, proc, stop });
    });
  });
}

/** Wait until `predicate()` is true (a hang guard, not a timing assertion). */
export async function until(predicate, what = "condition", seconds = 20) {
  const scale = Number(process.env.CREDENCE_TEST_TIMEOUT_SCALE ?? "1");
  const deadline = Date.now() + seconds * 1000 * scale;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
