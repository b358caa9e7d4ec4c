// Credence C# client: launch and supervise `credence serve --port 0` (protocol/SPEC.md §1).
//
// The sidecar prints exactly one line on stdout once its port is bound,
// `CREDENCE_URL=ws://127.0.0.1:PORT`; this class reads it, and when the process exits
// without Dispose() it starts it again on the same port, so a CredenceClient reconnects (and
// resumes) to the same URL. Desktop platforms and the Unity editor only (System.Diagnostics.
// Process does not run on WebGL, iOS, Android or consoles).

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace Credence
{
    /// <summary>How to start the sidecar (see <see cref="SidecarProcess"/>).</summary>
    public sealed class SidecarOptions
    {
        /// <summary>The program: <c>credence</c> on the PATH (default), a bundled binary, or <c>python3</c>.</summary>
        public string Command = "credence";
        /// <summary>Arguments before <c>serve</c>, e.g. <c>-m sidecar.cli</c> when Command is a Python.</summary>
        public IList<string> LeadingArguments = new string[0];
        /// <summary>More <c>credence serve</c> arguments (<c>--db</c>, <c>saves/town.db</c>, <c>--token</c>, …); not <c>--port</c>.</summary>
        public IList<string> Arguments = new string[0];
        /// <summary>Working directory of the sidecar (null: this process's).</summary>
        public string WorkingDirectory;
        /// <summary>The first port; 0 (default) lets the system pick a free one. Restarts reuse the bound one.</summary>
        public int Port;
        /// <summary>Start it again when it exits without Dispose() (default true).</summary>
        public bool Restart = true;
        /// <summary>Wait before a restart, doubled after each start that failed, up to 10 s.</summary>
        public TimeSpan RestartDelay = TimeSpan.FromMilliseconds(250);
        /// <summary>How long a start may take to print its URL before it is killed.</summary>
        public TimeSpan StartTimeout = TimeSpan.FromSeconds(30);
        /// <summary>How long Dispose() waits after asking the sidecar to stop before it kills it.</summary>
        public TimeSpan StopGrace = TimeSpan.FromSeconds(10);
    }

    /// <summary>
    /// A supervised <c>credence serve</c> process. <c>await SidecarProcess.StartAsync(options)</c>
    /// returns once it printed its URL; <see cref="Dispose"/> stops it for good. Events are raised
    /// on a thread-pool thread (not Unity's main thread).
    /// </summary>
    public sealed class SidecarProcess : IDisposable
    {
        public const string UrlPrefix = "CREDENCE_URL=";

        readonly SidecarOptions options;
        readonly object gate = new object();
        Process current;
        Uri url;
        int port;
        int failures;
        int restarts;
        bool disposed;

        /// <summary>Raised after every start that printed its URL (the first and each restart).</summary>
        public event Action<Uri> Ready;
        /// <summary>Raised when the process ended (its exit code), whether or not a restart follows.</summary>
        public event Action<int> Exited;
        /// <summary>Raised when a restart failed (no URL); another follows unless disposed.</summary>
        public event Action<Exception> RestartFailed;

        SidecarProcess(SidecarOptions options)
        {
            foreach (var a in options.Arguments)
                if (a == "--port") throw new ArgumentException("SidecarOptions.Arguments must not hold --port: use Port");
            this.options = options;
            port = options.Port;
        }

        /// <summary>Start the sidecar and wait for its URL (throws if the first start fails).</summary>
        public static async Task<SidecarProcess> StartAsync(SidecarOptions options = null)
        {
            var sidecar = new SidecarProcess(options ?? new SidecarOptions());
            await sidecar.LaunchAsync().ConfigureAwait(false);
            return sidecar;
        }

        /// <summary><c>ws://127.0.0.1:PORT/</c> of the running sidecar (the last URL it printed).</summary>
        public Uri Url { get { lock (gate) return url; } }
        /// <summary>How many times it was started again after exiting on its own.</summary>
        public int Restarts { get { lock (gate) return restarts; } }
        /// <summary>Whether a sidecar process runs now.</summary>
        public bool IsRunning { get { lock (gate) return current != null && !current.HasExited; } }
        /// <summary>The running process's id (null when none runs).</summary>
        public int? ProcessId { get { lock (gate) return current != null && !current.HasExited ? current.Id : (int?)null; } }

        string CommandLine()
        {
            var all = new List<string>(options.LeadingArguments);
            all.Add("serve");
            all.Add("--port");
            all.Add(port.ToString());
            all.AddRange(options.Arguments);
            return string.Join(" ", all.ConvertAll(Quote).ToArray());
        }

        static string Quote(string arg)
        {
            if (arg.Length > 0 && arg.IndexOfAny(new[] { ' ', '\t', '"', '\'' }) < 0) return arg;
            return "\"" + arg.Replace("\\", "\\\\").Replace("\"", "\\\"") + "\"";
        }

        async Task LaunchAsync()
        {
            var info = new ProcessStartInfo(options.Command, CommandLine())
            {
                UseShellExecute = false,
                RedirectStandardOutput = true,
                RedirectStandardInput = false,
                CreateNoWindow = true,
            };
            if (options.WorkingDirectory != null) info.WorkingDirectory = options.WorkingDirectory;
            var proc = new Process { StartInfo = info, EnableRaisingEvents = true };
            var printed = new TaskCompletionSource<Uri>(TaskCreationOptions.RunContinuationsAsynchronously);
            proc.OutputDataReceived += (_, e) =>
            {
                if (e.Data != null && e.Data.StartsWith(UrlPrefix, StringComparison.Ordinal))
                    printed.TrySetResult(new Uri(e.Data.Substring(UrlPrefix.Length).Trim() + "/"));
            };
            proc.Exited += (_, __) =>
            {
                printed.TrySetException(new InvalidOperationException("credence serve exited before printing its URL"));
                OnExit(proc);
            };
            lock (gate)
            {
                if (disposed) throw new ObjectDisposedException("SidecarProcess");
                proc.Start();
                current = proc;
            }
            proc.BeginOutputReadLine();
            var timeout = Task.Delay(options.StartTimeout);
            if (await Task.WhenAny(printed.Task, timeout).ConfigureAwait(false) == timeout)
            {
                try { proc.Kill(); } catch (InvalidOperationException) { }
                throw new TimeoutException("credence serve printed no URL in " + options.StartTimeout);
            }
            var bound = await printed.Task.ConfigureAwait(false);
            lock (gate)
            {
                url = bound;
                port = bound.Port;
                failures = 0;
            }
            var ready = Ready;
            if (ready != null) ready(bound);
        }

        void OnExit(Process proc)
        {
            int code;
            try { code = proc.ExitCode; } catch (InvalidOperationException) { code = -1; }
            bool again;
            lock (gate)
            {
                if (current == proc) current = null;
                // A first start that never printed its URL is the caller's error, not retried.
                again = !disposed && options.Restart && url != null;
            }
            var exited = Exited;
            if (exited != null) exited(code);
            if (again) Task.Run(() => RestartAsync());
        }

        async Task RestartAsync()
        {
            TimeSpan delay;
            lock (gate)
            {
                var ms = Math.Min(10000, options.RestartDelay.TotalMilliseconds * Math.Pow(2, failures));
                delay = TimeSpan.FromMilliseconds(ms);
            }
            await Task.Delay(delay).ConfigureAwait(false);
            lock (gate)
            {
                if (disposed) return;
                restarts++;
            }
            try
            {
                await LaunchAsync().ConfigureAwait(false);
            }
            catch (Exception e)
            {
                lock (gate)
                {
                    failures++;
                    if (failures >= 3) port = 0; // the old port stayed taken: let the system pick one
                }
                var failed = RestartFailed;
                if (failed != null) failed(e);
                // The failed process's exit schedules the next restart (url is set, so OnExit retries).
            }
        }

        /// <summary>Stop the sidecar for good: SIGTERM (Unix), then kill after StopGrace; no restart follows.</summary>
        public void Dispose()
        {
            Process proc;
            lock (gate)
            {
                if (disposed) return;
                disposed = true;
                proc = current;
            }
            if (proc == null) return;
            try
            {
                if (proc.HasExited) return;
                if (Environment.OSVersion.Platform == PlatformID.Unix || Environment.OSVersion.Platform == PlatformID.MacOSX)
                {
                    using (var term = Process.Start(new ProcessStartInfo("kill", "-TERM " + proc.Id) { UseShellExecute = false, CreateNoWindow = true }))
                        term.WaitForExit();
                }
                if (!proc.WaitForExit((int)options.StopGrace.TotalMilliseconds)) proc.Kill();
                proc.WaitForExit();
            }
            catch (InvalidOperationException)
            {
                // It exited meanwhile.
            }
        }
    }
}
