/**
 * `SidecarProcess`: launch `credence serve --port 0` from a Node game (or its dev server),
 * read the `CREDENCE_URL=` line it prints (SPEC §1), and keep it running: when it exits on
 * its own it is started again on the same port, so a `CredenceClient` reconnects (and
 * resumes) to the same URL. Node only: import it from `@credence/client/launch`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export const URL_PREFIX = "CREDENCE_URL=";

export interface LaunchOptions {
  /**
   * The program and its leading arguments; `serve`, `--port` and `args` follow. Default
   * `["credence"]`; e.g. `["python3", "-m", "sidecar.cli"]` or a path to a bundled binary.
   */
  command?: string[];
  /** More `credence serve` arguments (`["--db", "saves/town.db"]`); not `--port`. */
  args?: string[];
  /** Working directory of the sidecar (default: this process's). */
  cwd?: string;
  /** Its environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** The first port; default 0 (the system picks a free one). Restarts reuse the bound one. */
  port?: number;
  /** Start it again when it exits without `stop()` (default true). */
  restart?: boolean;
  /** Wait before a restart, doubled after each start that failed, up to 10 s (default 250). */
  restartDelayMs?: number;
  /** How long a start may take to print its URL before it is killed (default 30,000). */
  startTimeoutMs?: number;
  /** What to do with the sidecar's log (stderr): `"inherit"` (default) or `"ignore"`. */
  stderr?: "inherit" | "ignore";
}

export interface SidecarExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

type Listener<T> = (value: T) => void;
interface SidecarEvents {
  /** A (re)start printed its URL. */
  ready: string;
  /** The process ended (`stop()` or not). */
  exit: SidecarExit;
  /** A start failed (no URL); a restart follows unless stopped. */
  error: Error;
}

/** Start a supervised sidecar; resolves once it printed its URL (rejects if the first start fails). */
export function launchSidecar(options: LaunchOptions = {}): Promise<SidecarProcess> {
  const sidecar = new SidecarProcess(options);
  return sidecar.start().then(() => sidecar);
}

export class SidecarProcess {
  readonly options: LaunchOptions;
  /** How many times it was started again after exiting on its own. */
  restarts = 0;
  private current: ChildProcess | undefined;
  private bound: string | undefined;
  private port: number;
  private stopping = false;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly listeners = new Map<keyof SidecarEvents, Set<Listener<never>>>();

  constructor(options: LaunchOptions = {}) {
    if ((options.args ?? []).includes("--port")) {
      throw new Error("LaunchOptions.args must not hold --port: use options.port");
    }
    this.options = options;
    this.port = options.port ?? 0;
  }

  /** `ws://127.0.0.1:PORT` of the running sidecar (the last one printed). */
  get url(): string {
    if (this.bound === undefined) throw new Error("the sidecar has not printed its URL yet");
    return this.bound;
  }

  /** The process id of the running sidecar, if one runs. */
  get pid(): number | undefined {
    return this.running ? this.current!.pid : undefined;
  }

  /** Whether a sidecar process runs now. */
  get running(): boolean {
    return this.current !== undefined && this.current.exitCode === null && this.current.signalCode === null;
  }

  on<K extends keyof SidecarEvents>(kind: K, fn: Listener<SidecarEvents[K]>): () => void {
    let set = this.listeners.get(kind);
    if (!set) this.listeners.set(kind, (set = new Set()));
    set.add(fn as Listener<never>);
    return () => set!.delete(fn as Listener<never>);
  }

  private emit<K extends keyof SidecarEvents>(kind: K, value: SidecarEvents[K]): void {
    for (const fn of this.listeners.get(kind) ?? []) (fn as Listener<SidecarEvents[K]>)(value);
  }

  /** Start the process and wait for its URL. */
  start(): Promise<string> {
    this.stopping = false;
    const [program, ...lead] = this.options.command ?? ["credence"];
    if (program === undefined) throw new Error("LaunchOptions.command is empty");
    const args = [...lead, "serve", "--port", String(this.port), ...(this.options.args ?? [])];
    const proc = spawn(program, args, {
      cwd: this.options.cwd, env: this.options.env,
      stdio: ["ignore", "pipe", this.options.stderr ?? "inherit"],
    });
    this.current = proc;
    return new Promise<string>((resolve, reject) => {
      let printed = false;
      const fail = (error: Error) => {
        if (printed) return;
        printed = true;
        clearTimeout(deadline);
        proc.kill("SIGKILL");
        reject(error);
      };
      const deadline = setTimeout(
        () => fail(new Error(`credence serve printed no URL in ${this.options.startTimeoutMs ?? 30000} ms`)),
        this.options.startTimeoutMs ?? 30000,
      );
      proc.once("error", (err) => fail(err));
      createInterface({ input: proc.stdout! }).on("line", (line) => {
        if (printed || !line.startsWith(URL_PREFIX)) return;
        printed = true;
        clearTimeout(deadline);
        this.bound = line.slice(URL_PREFIX.length).trim();
        this.port = Number(new URL(this.bound).port);
        this.failures = 0;
        this.emit("ready", this.bound);
        resolve(this.bound);
      });
      proc.once("exit", (code, signal) => {
        fail(new Error(`credence serve exited (${signal ?? code}) before printing its URL`));
        if (this.current === proc) this.current = undefined;
        this.emit("exit", { code, signal });
        this.supervise();
      });
    });
  }

  private supervise(): void {
    // A first start that never printed its URL is the caller's error to see, not to retry.
    if (this.stopping || this.options.restart === false || this.bound === undefined) return;
    const base = this.options.restartDelayMs ?? 250;
    const delay = Math.min(10000, base * 2 ** this.failures);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopping) return;
      this.restarts += 1;
      this.start().catch((err: Error) => {
        this.failures += 1;
        // The old port stayed taken after several tries: let the system pick a new one.
        if (this.failures >= 3) this.port = 0;
        this.emit("error", err);
      });
    }, delay);
  }

  /** Stop it for good (SIGTERM, SIGKILL after `graceMs`); resolves once it exited. */
  async stop(graceMs = 10000): Promise<void> {
    this.stopping = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const proc = this.current;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const kill = setTimeout(() => proc.kill("SIGKILL"), graceMs);
      proc.once("exit", () => {
        clearTimeout(kill);
        resolve();
      });
      proc.kill("SIGTERM");
    });
  }

  /** `await using sidecar = await launchSidecar(...)` stops it at the end of the scope. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
