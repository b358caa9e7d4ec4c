// Credence C# client: one connection to a Credence sidecar, kept alive (protocol/SPEC.md).
//
// What it owns, so a game does not write it by hand:
//
//   * hello and auth: the token in hello.token (default, works everywhere) or as an
//     Authorization: Bearer header (TokenInHeader); the welcome is returned by ConnectAsync.
//   * events with ack tasks: SendEventAsync returns a Task<Ack> that completes on the ack and
//     fails with CredenceErrorException on a refusal (invalid_event, contract_violation, …).
//   * one ordered queue of outgoing frames: every frame gets a client rid; replies come in
//     request order (SPEC §14.2), so each reply completes the oldest frame in flight (checked
//     against the rid it echoes).
//   * automatic reconnect: when the connection drops (not for a fatal close such as 4001),
//     wait (ReconnectDelay), reconnect with hello.resume = the last seq received and
//     hello.filters = every filter the connection held (the hello's and those added with
//     SubscribeAsync, as UnsubscribeAsync left them), so the backlog is read through all of
//     them (SPEC §9), then resend every frame not yet answered, in order; an event already stored is acked as a duplicate (idempotent by
//     event_id), so nothing is lost and nothing is applied twice (SPEC §9).
//   * paged replies joined: the list fields of every part are concatenated (SPEC §11).
//   * typed notifications: BeliefChange, Resumed, Welcome, Disconnected and unmatched
//     errors are queued by the network thread and handed out by DispatchPending() on the
//     thread that calls it (Unity: from Update(), i.e. the main thread).
//   * a local mirror of the subscribed beliefs (BeliefMirror), kept by DispatchPending().
//   * backpressure both ways: at most MaxInFlight frames await a reply on the wire (the rest
//     wait locally, at most MaxQueuedFrames, then SendEventAsync throws); and when the game
//     lets more than MaxPendingNotifications notifications pile up undispatched, the client
//     stops reading the socket (TCP backpressure: the sidecar may then close 4008, after
//     which the client reconnects and resumes; nothing is lost).
//
// Threading: every public method may be called from any thread. Network work runs on the
// thread pool; task continuations run asynchronously (in Unity, an await resumes on the
// main thread through Unity's SynchronizationContext).

using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Net.WebSockets;
using System.Threading;
using System.Threading.Tasks;

namespace Credence
{
    public enum ConnectionState
    {
        /// <summary>ConnectAsync not called yet (frames sent now wait in the queue).</summary>
        Idle,
        Connecting,
        Open,
        /// <summary>The connection dropped; the client is reconnecting (frames wait in the queue).</summary>
        Reconnecting,
        /// <summary>A fatal refusal (e.g. 4001 unauthorized): no reconnect; pending tasks failed.</summary>
        Failed,
        /// <summary>CloseAsync was called.</summary>
        Closed,
    }

    public sealed class CredenceOptions
    {
        /// <summary>The sidecar's <c>ws://host:port/</c> (what <c>credence serve</c> printed as CREDENCE_URL).</summary>
        public Uri Url = new Uri("ws://127.0.0.1:8765/");
        /// <summary>Asked before every connection attempt instead of <see cref="Url"/> when set (e.g. <c>() => sidecar.Url</c> of a <see cref="SidecarProcess"/>).</summary>
        public Func<Uri> UrlSource;
        /// <summary>The world (save game, shard) this connection reads and writes. Required.</summary>
        public string World;
        /// <summary>A writer or reader token; null for a sidecar in open mode.</summary>
        public string Token;
        /// <summary>Send the token as <c>Authorization: Bearer</c> at the upgrade instead of in <c>hello.token</c>.</summary>
        public bool TokenInHeader;
        /// <summary>Free text for the sidecar's log.</summary>
        public string ClientName = "credence-csharp/0.1";
        /// <summary>The hello's subscription: these residents (null: none unless SubscribeAll).</summary>
        public IList<string> Subscribe;
        /// <summary>Subscribe to every resident (<c>"*"</c>).</summary>
        public bool SubscribeAll;
        /// <summary>Resume point for the first connection (0 replays the world's history into the mirror); null: live only.</summary>
        public long? ResumeFrom;
        /// <summary>At most this many frames await their reply on the wire.</summary>
        public int MaxInFlight = 256;
        /// <summary>At most this many frames wait in the client (in flight or queued); beyond, sends throw.</summary>
        public int MaxQueuedFrames = 100000;
        /// <summary>Stop reading the socket while this many notifications wait for DispatchPending.</summary>
        public int MaxPendingNotifications = 10000;
        /// <summary>How long a connection attempt may take, from the TCP connect to the welcome.</summary>
        public TimeSpan HandshakeTimeout = TimeSpan.FromSeconds(10);
        /// <summary>Reconnect after a drop (default); false: a drop turns the client Failed and fails what is pending.</summary>
        public bool AutoReconnect = true;
        /// <summary>Wait before reconnect attempt n (1, 2, …). Default: 0.2 s doubling to 5 s, with jitter.</summary>
        public Func<int, CancellationToken, Task> ReconnectDelay;
        /// <summary>ConnectAsync waits for a sidecar that does not answer yet (nothing listening: still
        /// starting; a full sidecar's 503; a handshake cut off or timed out), trying again after
        /// <see cref="ReconnectDelay"/> as a reconnect does, until it is welcomed, refused for good
        /// (4001 unauthorized, …: CredenceConnectionException) or cancelled (OperationCanceledException)
        /// — as the TypeScript and Godot clients do. False: the first failed attempt throws
        /// CredenceConnectionException (Code null).</summary>
        public bool WaitForSidecar = true;
        /// <summary>Keep <see cref="CredenceClient.Mirror"/> up to date in DispatchPending.</summary>
        public bool KeepMirror = true;
    }

    public sealed class CredenceClient : IDisposable
    {
        static readonly Dictionary<string, string[]> PagedLists = new Dictionary<string, string[]>
        {
            { "beliefs", new[] { "beliefs" } },
            { "explanation", new[] { "evidence", "history" } },
            { "distribution", new[] { "residents" } },
            { "narrative", new[] { "sections" } },
            { "graph", new[] { "nodes", "edges" } },
            { "trust", new[] { "entries" } },
            { "worlds", new[] { "worlds" } },
            { "residents", new[] { "residents" } },
            { "events", new[] { "events" } },
            { "said", new[] { "said" } },
            { "promises", new[] { "promises" } },
            { "goals", new[] { "goals" } },
        };

        /// <summary>
        /// A narrative too long for one frame (SPEC §11): its <c>text</c> comes in pieces, to
        /// concatenate, and a long section in runs of the same name, to join into one. The
        /// part's sections were already appended to <paramref name="joined"/>.
        /// </summary>
        static void JoinNarrative(Dictionary<string, object> joined, Dictionary<string, object> part)
        {
            joined["text"] = (Wire.Get(joined, "text") as string ?? "") + (Wire.Get(part, "text") as string ?? "");
            var sections = Wire.Get(joined, "sections") as List<object>;
            if (sections == null) return;
            var merged = new List<object>();
            foreach (var one in sections)
            {
                var section = one as Dictionary<string, object>;
                var last = merged.Count > 0 ? merged[merged.Count - 1] as Dictionary<string, object> : null;
                if (section != null && last != null && Equals(Wire.Get(last, "name"), Wire.Get(section, "name")))
                {
                    var entries = Wire.Get(last, "entries") as List<object>;
                    var more = Wire.Get(section, "entries") as List<object>;
                    if (entries != null && more != null) entries.AddRange(more);
                }
                else merged.Add(one);
            }
            joined["sections"] = merged;
        }

        sealed class Item
        {
            public long Rid;
            public string Type;
            public string EventId;
            public byte[] Bytes;
            public Dictionary<string, object> Frame;
            public bool Sent;
            /// <summary>A subscription replayed after a reconnect: its reply only matters to us.</summary>
            public bool Replay;
            public Dictionary<string, object> Joined;
            public int Parts;
            public readonly TaskCompletionSource<Dictionary<string, object>> Done =
                new TaskCompletionSource<Dictionary<string, object>>(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        sealed class Conn
        {
            public ClientWebSocket Ws;
            public long MaxFrame;
            public readonly CancellationTokenSource Cts = new CancellationTokenSource();
            public readonly ConcurrentQueue<byte[]> Outbox = new ConcurrentQueue<byte[]>();
            public readonly SemaphoreSlim Signal = new SemaphoreSlim(0);
            public int? CloseCode;
            public string CloseReason;
            public string LastErrorCode;
            /// <summary>Its receive and write loops: CloseAsync waits for them to end.</summary>
            public Task Loops = Task.FromResult(true);
        }

        readonly CredenceOptions options;
        readonly object gate = new object();
        readonly LinkedList<Item> items = new LinkedList<Item>();
        readonly Dictionary<string, Item> eventsById = new Dictionary<string, Item>(StringComparer.Ordinal);
        // The connection's filters as the sidecar holds them (SPEC §8.2–8.3), restored in the
        // hello of a reconnect, and the residents an unsubscribe excluded from "*" filters.
        List<Dictionary<string, object>> filters = new List<Dictionary<string, object>>();
        readonly HashSet<string> excluded = new HashSet<string>(StringComparer.Ordinal);
        readonly ConcurrentQueue<object> inbox = new ConcurrentQueue<object>();
        readonly CancellationTokenSource lifetime = new CancellationTokenSource();
        readonly BeliefMirror mirror = new BeliefMirror();
        readonly Random jitter = new Random();

        Conn conn;
        ConnectionState state = ConnectionState.Idle;
        // The reconnect loop running after a drop, if any: CloseAsync waits for it to end.
        Task reconnecting = Task.FromResult(true);
        long lastSeq;
        bool haveSeq;
        bool inBacklog;
        long nextRid;
        int inFlight;
        int connections;
        int maxInFlightSeen;
        long maxFrame = 262144;
        TaskCompletionSource<bool> room;

        /// <summary>Raised by DispatchPending for each belief notification, in seq order.</summary>
        public event Action<BeliefChange> BeliefChanged;
        /// <summary>Raised by DispatchPending after a resume backlog (every reconnect, and a first ResumeFrom).</summary>
        public event Action<Resumed> ResumeCompleted;
        /// <summary>Raised by DispatchPending for each welcome (the first connection and every reconnect).</summary>
        public event Action<Welcome> Connected;
        /// <summary>Raised by DispatchPending when the connection dropped.</summary>
        public event Action<Disconnected> ConnectionLost;
        /// <summary>Raised by DispatchPending for an error frame that answers no frame of ours (e.g. slow_consumer).</summary>
        public event Action<CredenceErrorException> ErrorReceived;

        public CredenceClient(CredenceOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            if (string.IsNullOrEmpty(options.World)) throw new ArgumentException("options.World is required");
            if (options.MaxInFlight < 1) throw new ArgumentException("options.MaxInFlight must be at least 1");
            this.options = options;
            if (options.SubscribeAll) filters.Add(new Dictionary<string, object> { { "residents", "*" } });
            else if (options.Subscribe != null) filters.Add(new Dictionary<string, object> { { "residents", Events.Ids(options.Subscribe) } });
        }

        public ConnectionState State { get { lock (gate) return state; } }
        /// <summary>The seq of the last change received (or the welcome's): the next resume point.</summary>
        public long LastSeq { get { lock (gate) return lastSeq; } }
        /// <summary>Events sent or queued and not yet answered.</summary>
        public int UnackedEvents { get { lock (gate) return eventsById.Count; } }
        /// <summary>Frames on the wire awaiting their reply.</summary>
        public int InFlight { get { lock (gate) return inFlight; } }
        /// <summary>The largest InFlight ever reached (to check the window).</summary>
        public int MaxInFlightSeen { get { lock (gate) return maxInFlightSeen; } }
        /// <summary>Frames waiting in the client (in flight or not yet sent).</summary>
        public int QueuedFrames { get { lock (gate) return items.Count; } }
        /// <summary>Notifications waiting for DispatchPending.</summary>
        public int PendingNotifications { get { return inbox.Count; } }
        /// <summary>How many connections were established (1 + successful reconnects).</summary>
        public int Connections { get { lock (gate) return connections; } }
        public BeliefMirror Mirror { get { return mirror; } }
        /// <summary>Copies of the filters this connection holds (what a reconnect restores): maps with <c>residents</c> and, if given, <c>roots</c>, <c>changes</c>, <c>crossing</c>.</summary>
        public List<Dictionary<string, object>> Subscriptions
        {
            get { lock (gate) return filters.ConvertAll(f => new Dictionary<string, object>(f)); }
        }

        // ------------------------------------------------------------------ connecting

        /// <summary>Open the connection and say hello; throws CredenceConnectionException on a refusal, or when it cannot
        /// connect at all (<c>Code</c> null: nothing listening, or a sidecar serving its <c>max_connections</c> answered 503;
        /// try again later).</summary>
        public async Task<Welcome> ConnectAsync(CancellationToken cancel = default(CancellationToken))
        {
            lock (gate)
            {
                if (state != ConnectionState.Idle) throw new InvalidOperationException("ConnectAsync was already called");
                state = ConnectionState.Connecting;
            }
            try
            {
                for (int attempt = 1; ; attempt++)
                {
                    try
                    {
                        return await OpenAsync(false, cancel).ConfigureAwait(false);
                    }
                    catch (CredenceConnectionException e) when (e.Code == null && Waiting(cancel))
                    {
                        // No handshake (nothing listening, a 503, closed midway): not there yet.
                    }
                    catch (OperationCanceledException) when (Waiting(cancel))
                    {
                        // The handshake timed out (HandshakeTimeout), not the caller's cancel.
                    }
                    using (var wait = CancellationTokenSource.CreateLinkedTokenSource(cancel, lifetime.Token))
                    {
                        try
                        {
                            await WaitBeforeAttempt(attempt, wait.Token).ConfigureAwait(false);
                        }
                        catch (OperationCanceledException) when (!cancel.IsCancellationRequested)
                        {
                            throw new CredenceConnectionException("the client was closed", null, null);
                        }
                    }
                }
            }
            catch (Exception)
            {
                lock (gate) if (state == ConnectionState.Connecting) state = ConnectionState.Idle;
                throw;
            }
        }

        /// <summary>Whether ConnectAsync tries again after a failed attempt: it waits for the sidecar,
        /// and neither the caller nor CloseAsync gave up.</summary>
        bool Waiting(CancellationToken cancel)
        {
            if (!options.WaitForSidecar || cancel.IsCancellationRequested || lifetime.IsCancellationRequested) return false;
            lock (gate) return state == ConnectionState.Connecting;
        }

        async Task<Welcome> OpenAsync(bool reconnect, CancellationToken cancel)
        {
            var ws = new ClientWebSocket();
            if (options.Token != null && options.TokenInHeader)
                ws.Options.SetRequestHeader("Authorization", "Bearer " + options.Token);
            using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancel, lifetime.Token))
            {
                timeout.CancelAfter(options.HandshakeTimeout);
                Dictionary<string, object> first;
                long? resume;
                try
                {
                    var url = options.UrlSource != null ? options.UrlSource() : options.Url;
                    try
                    {
                        await ws.ConnectAsync(url, timeout.Token).ConfigureAwait(false);
                    }
                    catch (WebSocketException e)
                    {
                        // No handshake: nothing listening, or the sidecar answered an HTTP status instead
                        // (503 when it serves its max_connections already, SPEC §2): try again later.
                        var why = e.Message;
                        for (var inner = e.InnerException; inner != null; inner = inner.InnerException)
                            why += " (" + inner.Message + ")";
                        throw new CredenceConnectionException("cannot connect to " + url + ": " + why
                            + "; a sidecar serving its max_connections answers 503: try again later", null, null);
                    }
                    var hello = new Dictionary<string, object>
                    {
                        { "type", "hello" }, { "protocol", 1 }, { "world", options.World },
                    };
                    if (options.Token != null && !options.TokenInHeader) hello["token"] = options.Token;
                    if (options.ClientName != null) hello["client"] = options.ClientName;
                    lock (gate)
                    {
                        if (!reconnect)
                        {
                            if (options.SubscribeAll) hello["subscribe"] = "*";
                            else if (options.Subscribe != null) hello["subscribe"] = Events.Ids(options.Subscribe);
                        }
                        else if (filters.Count > 0)
                        {
                            // Every filter held, so the backlog is read through all of them (SPEC §9).
                            hello["filters"] = filters.ConvertAll(f => (object)new Dictionary<string, object>(f));
                        }
                        resume = haveSeq ? lastSeq : options.ResumeFrom;
                    }
                    if (resume.HasValue) hello["resume"] = resume.Value;
                    hello["rid"] = "hello";
                    var bytes = MsgPack.Encode(hello);
                    await ws.SendAsync(new ArraySegment<byte>(bytes), WebSocketMessageType.Binary, true, timeout.Token).ConfigureAwait(false);
                    var buffer = new byte[65536];
                    var data = await ReceiveMessage(ws, buffer, timeout.Token).ConfigureAwait(false);
                    if (data == null)
                        throw new CredenceConnectionException("closed during the handshake", (int?)ws.CloseStatus, null);
                    first = MsgPack.DecodeFrame(data);
                    if (Wire.Str(first, "type") == "error")
                    {
                        // A handshake refusal is fatal: read on to learn the close code.
                        int? code = null;
                        try
                        {
                            while (await ReceiveMessage(ws, buffer, timeout.Token).ConfigureAwait(false) != null) { }
                            code = (int?)ws.CloseStatus;
                        }
                        catch (Exception) { }
                        throw new CredenceConnectionException(
                            "the sidecar refused the hello: " + Wire.Str(first, "code") + ": " + Wire.Str(first, "message"),
                            code, Wire.Str(first, "code"));
                    }
                    if (Wire.Str(first, "type") != "welcome")
                        throw new CredenceProtocolException("bad_frame", "expected welcome, got " + Wire.Str(first, "type"));
                }
                catch (Exception)
                {
                    ws.Abort();
                    ws.Dispose();
                    throw;
                }

                var welcome = Welcome.From(first, reconnect);
                var c = new Conn { Ws = ws, MaxFrame = welcome.MaxFrame };
                lock (gate)
                {
                    if (state == ConnectionState.Closed || lifetime.IsCancellationRequested)
                    {
                        ws.Abort();
                        throw new CredenceConnectionException("the client was closed", null, null);
                    }
                    maxFrame = welcome.MaxFrame;
                    if (resume.HasValue)
                    {
                        lastSeq = resume.Value;
                        inBacklog = true;
                    }
                    else
                    {
                        lastSeq = welcome.Seq;
                    }
                    haveSeq = true;
                    conn = c;
                    state = ConnectionState.Open;
                    connections++;
                    inFlight = 0;
                    foreach (var item in items)
                    {
                        item.Sent = false;
                        item.Joined = null;
                        item.Parts = 0;
                    }
                    if (reconnect && excluded.Count > 0)
                    {
                        // Exclusions from "*" filters have no place in a hello: restore them ahead of
                        // everything queued (Handle drops the backlog's notifications about them).
                        var unsub = Frame("unsubscribe");
                        unsub["residents"] = new List<object>(excluded);
                        items.AddFirst(NewItem(unsub, true));
                    }
                    inbox.Enqueue(welcome);
                    Pump();
                }
                var receiving = ReceiveLoop(c);
                var writing = WriteLoop(c);
                Background(receiving);
                Background(writing);
                c.Loops = Task.WhenAll(receiving, writing);
                return welcome;
            }
        }

        /// <summary>Run a loop in the background; its own catch blocks handle every failure.</summary>
        static void Background(Task loop)
        {
            loop.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
        }

        static async Task<byte[]> ReceiveMessage(ClientWebSocket ws, byte[] buffer, CancellationToken cancel)
        {
            MemoryStream whole = null;
            while (true)
            {
                var result = await ws.ReceiveAsync(new ArraySegment<byte>(buffer), cancel).ConfigureAwait(false);
                if (result.MessageType == WebSocketMessageType.Close) return null;
                if (result.MessageType == WebSocketMessageType.Text)
                    throw new CredenceProtocolException("bad_frame", "a text message on a msgpack connection");
                if (result.EndOfMessage && whole == null)
                {
                    var one = new byte[result.Count];
                    Buffer.BlockCopy(buffer, 0, one, 0, result.Count);
                    return one;
                }
                if (whole == null) whole = new MemoryStream();
                whole.Write(buffer, 0, result.Count);
                if (result.EndOfMessage) return whole.ToArray();
            }
        }

        async Task WriteLoop(Conn c)
        {
            try
            {
                while (true)
                {
                    await c.Signal.WaitAsync(c.Cts.Token).ConfigureAwait(false);
                    byte[] bytes;
                    while (c.Outbox.TryDequeue(out bytes))
                        await c.Ws.SendAsync(new ArraySegment<byte>(bytes), WebSocketMessageType.Binary, true, CancellationToken.None).ConfigureAwait(false);
                }
            }
            catch (Exception)
            {
                // Cancelled by a disconnect, or the socket failed: the receive loop sees it too.
                if (!c.Cts.IsCancellationRequested) c.Ws.Abort();
            }
        }

        async Task ReceiveLoop(Conn c)
        {
            var buffer = new byte[65536];
            try
            {
                while (true)
                {
                    await WaitForRoom(c).ConfigureAwait(false);
                    var data = await ReceiveMessage(c.Ws, buffer, CancellationToken.None).ConfigureAwait(false);
                    if (data == null) break;
                    Handle(c, MsgPack.DecodeFrame(data));
                }
            }
            catch (CredenceProtocolException e)
            {
                // The sidecar sent bytes the protocol refuses: report it, drop the connection, reconnect.
                inbox.Enqueue(new CredenceErrorException(new Dictionary<string, object>
                {
                    { "type", "error" }, { "code", e.Code }, { "message", "from the sidecar: " + e.Message },
                }));
            }
            catch (Exception)
            {
                // Socket failure or abort: handled below.
            }
            try
            {
                c.CloseCode = (int?)c.Ws.CloseStatus;
                c.CloseReason = c.Ws.CloseStatusDescription;
            }
            catch (Exception) { }
            c.Ws.Abort();
            Lost(c);
        }

        Task WaitForRoom(Conn c)
        {
            lock (gate)
            {
                if (inbox.Count < options.MaxPendingNotifications) return Task.FromResult(true);
                if (room == null) room = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                var wait = room.Task;
                return Task.WhenAny(wait, Task.Delay(Timeout.Infinite, c.Cts.Token));
            }
        }

        void Lost(Conn c)
        {
            bool reconnect;
            var gone = new Disconnected { CloseCode = c.CloseCode, Reason = c.CloseReason };
            lock (gate)
            {
                if (conn != c) return;
                conn = null;
                c.Cts.Cancel();
                inFlight = 0;
                inBacklog = false;
                int code = c.CloseCode ?? 0;
                // 4000-4002: the sidecar refuses us for good; 1002/1007: our frames broke the WebSocket
                // protocol, and resending them would only repeat it. 4011 after the welcome is the
                // sidecar's own failure (SPEC §13): retry. Everything else (1001, 1006, 1011, 4008): retry.
                bool fatal = code == 4000 || code == 4001 || code == 4002 || code == 1002 || code == 1007;
                if (state == ConnectionState.Closed) gone.Final = true;
                else if (fatal || !options.AutoReconnect)
                {
                    state = ConnectionState.Failed;
                    gone.Final = true;
                }
                else state = ConnectionState.Reconnecting;
                reconnect = state == ConnectionState.Reconnecting;
            }
            inbox.Enqueue(gone);
            if (reconnect)
            {
                var loop = ReconnectLoop();
                Background(loop);
                lock (gate) reconnecting = loop;
            }
            else FailAll(new CredenceConnectionException("the connection closed (" + gone.CloseCode + " " + gone.Reason + ")", gone.CloseCode, c.LastErrorCode));
        }

        async Task ReconnectLoop()
        {
            for (int attempt = 1; ; attempt++)
            {
                try
                {
                    await WaitBeforeAttempt(attempt, lifetime.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
                lock (gate) if (state != ConnectionState.Reconnecting) return;
                try
                {
                    await OpenAsync(true, lifetime.Token).ConfigureAwait(false);
                    return;
                }
                catch (CredenceConnectionException e)
                {
                    if (e.Code == null) continue; // closed during the handshake: try again
                    // The sidecar refused the hello (e.g. the token was revoked): give up.
                    lock (gate)
                    {
                        if (state != ConnectionState.Reconnecting) return;
                        state = ConnectionState.Failed;
                    }
                    inbox.Enqueue(new Disconnected { CloseCode = e.CloseCode, Reason = e.Code, Final = true });
                    FailAll(e);
                    return;
                }
                catch (Exception)
                {
                    // Refused, timed out, reset: the sidecar is not back yet.
                }
            }
        }

        /// <summary>The wait before attempt n (1, 2, …) of a reconnect or of ConnectAsync: ReconnectDelay, or the default backoff.</summary>
        Task WaitBeforeAttempt(int attempt, CancellationToken cancel)
        {
            return options.ReconnectDelay != null ? options.ReconnectDelay(attempt, cancel) : Task.Delay(DefaultDelay(attempt), cancel);
        }

        TimeSpan DefaultDelay(int attempt)
        {
            double seconds = Math.Min(5.0, 0.2 * Math.Pow(2, Math.Min(attempt - 1, 10)));
            double factor;
            lock (jitter) factor = 0.8 + 0.4 * jitter.NextDouble();
            return TimeSpan.FromSeconds(seconds * factor);
        }

        /// <summary>Drop the socket as a network failure would (the client reconnects and resumes). For tests and "reconnect now" buttons.</summary>
        public void DropConnection()
        {
            Conn c;
            lock (gate) c = conn;
            if (c != null) c.Ws.Abort();
        }

        /// <summary>Close the connection (1000); every task still pending fails with
        /// CredenceConnectionException. When it returns, the client's background loops (receive,
        /// write, reconnect) have ended (each is given up to 2 s): nothing of the client runs on
        /// after it, so a game, an editor reload or a process can let go of it.</summary>
        public async Task CloseAsync()
        {
            Conn c;
            Task reconnect;
            lock (gate)
            {
                if (state == ConnectionState.Closed) return;
                state = ConnectionState.Closed;
                c = conn;
                reconnect = reconnecting;
            }
            lifetime.Cancel();
            if (c != null)
            {
                try
                {
                    c.Cts.Cancel();
                    var close = c.Ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "", CancellationToken.None);
                    await Task.WhenAny(close, Task.Delay(2000)).ConfigureAwait(false);
                }
                catch (Exception) { }
                c.Ws.Abort();
                await Task.WhenAny(c.Loops, Task.Delay(2000)).ConfigureAwait(false);
            }
            await Task.WhenAny(reconnect, Task.Delay(2000)).ConfigureAwait(false);
            FailAll(new CredenceConnectionException("the client was closed", null, null));
        }

        public void Dispose()
        {
            CloseAsync().Wait(3000);
        }

        void FailAll(Exception error)
        {
            List<Item> failed;
            lock (gate)
            {
                failed = new List<Item>(items);
                items.Clear();
                eventsById.Clear();
                inFlight = 0;
            }
            foreach (var item in failed) item.Done.TrySetException(error);
        }

        // ------------------------------------------------------------------ sending

        Item NewItem(IDictionary<string, object> frame, bool replay)
        {
            var copy = new Dictionary<string, object>(StringComparer.Ordinal);
            foreach (var kv in frame) copy[kv.Key] = kv.Value;
            var item = new Item { Rid = ++nextRid, Type = copy["type"] as string, Replay = replay };
            copy["rid"] = item.Rid;
            item.Frame = copy;
            item.Bytes = MsgPack.Encode(copy);
            if (item.Bytes.Length > maxFrame)
                throw new ArgumentException("the frame is " + item.Bytes.Length + " bytes, more than the sidecar's max_frame " + maxFrame);
            return item;
        }

        Task<Dictionary<string, object>> Enqueue(IDictionary<string, object> frame, string eventId)
        {
            if (frame == null) throw new ArgumentNullException("frame");
            if (!(Wire.Get(frame, "type") is string)) throw new ArgumentException("a frame needs a string 'type'");
            lock (gate)
            {
                if (state == ConnectionState.Closed || state == ConnectionState.Failed)
                    throw new CredenceConnectionException("the client is " + state.ToString().ToLowerInvariant(), null, null);
                Item known;
                if (eventId != null && eventsById.TryGetValue(eventId, out known)) return known.Done.Task;
                if (items.Count >= options.MaxQueuedFrames)
                    throw new InvalidOperationException("the client already holds MaxQueuedFrames frames awaiting replies");
                var item = NewItem(frame, false);
                item.EventId = eventId;
                items.AddLast(item);
                if (eventId != null) eventsById[eventId] = item;
                Pump();
                return item.Done.Task;
            }
        }

        /// <summary>Send what the window allows, in order (call with the gate held).</summary>
        void Pump()
        {
            var c = conn;
            if (c == null || state != ConnectionState.Open) return;
            foreach (var item in items)
            {
                if (item.Sent) continue;
                if (inFlight >= options.MaxInFlight) break;
                item.Sent = true;
                inFlight++;
                if (inFlight > maxInFlightSeen) maxInFlightSeen = inFlight;
                c.Outbox.Enqueue(item.Bytes);
                c.Signal.Release();
            }
        }

        /// <summary>
        /// Send an event frame (type <c>event</c>, or <c>trust</c> with a value, or <c>propose</c>).
        /// The task completes with the ack once the event and its consequences are committed, and
        /// fails with CredenceErrorException if the sidecar refuses it. Sending the same event_id
        /// again while it is pending returns the same task. Survives reconnects (resent by id).
        /// </summary>
        public Task<Ack> SendEventAsync(IDictionary<string, object> frame)
        {
            var id = Wire.Get(frame, "event_id") as string;
            if (string.IsNullOrEmpty(id)) throw new ArgumentException("an event needs a non-empty string event_id");
            return AsAck(Enqueue(frame, id));
        }

        static async Task<Ack> AsAck(Task<Dictionary<string, object>> reply)
        {
            return Ack.From(await reply.ConfigureAwait(false));
        }

        static async Task<Reply> AsReply(Task<Dictionary<string, object>> reply)
        {
            var frame = await reply.ConfigureAwait(false);
            object parts;
            frame.TryGetValue("part", out parts);
            frame.Remove("part");
            return new Reply { Type = Wire.Str(frame, "type"), Frame = frame, Parts = (int)((parts as long?) ?? 0) + 1 };
        }

        /// <summary>Send a query or (un)subscribe frame; the reply comes back joined over its parts.</summary>
        public Task<Reply> RequestAsync(IDictionary<string, object> frame)
        {
            return AsReply(Enqueue(frame, null));
        }

        /// <summary>A resident's beliefs in root order, joined over every page (SPEC §10.1); <paramref name="after"/>: only roots after this one.</summary>
        public Task<Reply> BeliefsAsync(string resident, string after = null)
        {
            return BeliefsAsync(resident, new BeliefsFilter { After = after });
        }

        /// <summary>A resident's beliefs narrowed by <paramref name="filter"/> (every condition given must hold, SPEC §10.1).</summary>
        public Task<Reply> BeliefsAsync(string resident, BeliefsFilter filter)
        {
            var f = Frame("beliefs");
            f["resident"] = resident;
            if (filter != null) filter.WriteTo(f);
            return RequestAsync(f);
        }

        /// <summary>
        /// Why <paramref name="resident"/> believes what she does about <paramref name="root"/>: the belief, its
        /// evidence and its change records (SPEC §10.2). <paramref name="limit"/>: only the latest that many of
        /// each (<c>evidence_total</c> and <c>history_total</c> still count them all), so a belief seen 10,000
        /// times answers small.
        /// </summary>
        public Task<Reply> ExplainAsync(string resident, string root, int? limit = null)
        {
            var f = Frame("explain");
            f["resident"] = resident;
            f["root"] = root;
            if (limit.HasValue) f["limit"] = limit.Value;
            return RequestAsync(f);
        }

        public Task<Reply> DistributionAsync(string root)
        {
            var f = Frame("distribution");
            f["root"] = root;
            return RequestAsync(f);
        }

        /// <summary>
        /// A resident's beliefs as prompt text (SPEC §10.4): at most <paramref name="budget"/> characters
        /// (200–50,000, default 2000), in <paramref name="lang"/> (<c>en</c>, <c>zh-Hant</c>), the lines
        /// bearing on <paramref name="focus"/> (people and places present, root prefixes, topics) first.
        /// </summary>
        public Task<Reply> NarrativeAsync(string resident, int? budget = null, string lang = null, NarrativeFocus focus = null)
        {
            var f = Frame("narrative");
            f["resident"] = resident;
            if (budget.HasValue) f["budget"] = budget.Value;
            if (lang != null) f["lang"] = lang;
            if (focus != null) f["focus"] = focus.ToFrame();
            return RequestAsync(f);
        }

        /// <summary>
        /// One page of the belief graph of a resident, a root, or one belief (give at least one;
        /// SPEC §10.5): at most <paramref name="limit"/> event nodes (1–1000, default 100) after
        /// <paramref name="after"/>, the <see cref="Reply.Next"/> of the previous page.
        /// </summary>
        public Task<Reply> GraphAsync(string resident, string root, string after = null, int? limit = null)
        {
            var f = Frame("graph");
            if (resident != null) f["resident"] = resident;
            if (root != null) f["root"] = root;
            if (after != null) f["after"] = after;
            if (limit.HasValue) f["limit"] = limit.Value;
            return RequestAsync(f);
        }

        /// <summary>
        /// Every page of a belief graph in order (one query each, following <see cref="Reply.Next"/>),
        /// at most <paramref name="maxPages"/> of them: a belief seen 10,000 times is 100 pages of 100.
        /// </summary>
        public async Task<List<Reply>> GraphPagesAsync(string resident, string root, int? limit = null, int maxPages = 1000)
        {
            var pages = new List<Reply>();
            string after = null;
            while (pages.Count < maxPages)
            {
                var page = await GraphAsync(resident, root, after, limit).ConfigureAwait(false);
                pages.Add(page);
                after = page.Next;
                if (after == null) break;
            }
            return pages;
        }

        /// <summary>
        /// One page of a resident's trust table (optionally of one source; SPEC §10.6): at most
        /// <paramref name="limit"/> entries (1–1000, default 100) in (source, topic) order after
        /// <paramref name="after"/>, the <see cref="Reply.Next"/> of the previous page.
        /// </summary>
        public Task<Reply> TrustAsync(string resident, string source = null, string after = null, int? limit = null)
        {
            var f = Frame("trust");
            f["resident"] = resident;
            if (source != null) f["source"] = source;
            if (after != null) f["after"] = after;
            if (limit.HasValue) f["limit"] = limit.Value;
            return RequestAsync(f);
        }

        /// <summary>
        /// Every page of a trust table in order (one query each, following <see cref="Reply.Next"/>),
        /// at most <paramref name="maxPages"/> of them.
        /// </summary>
        public async Task<List<Reply>> TrustPagesAsync(string resident, string source = null, int? limit = null, int maxPages = 1000)
        {
            var pages = new List<Reply>();
            string after = null;
            while (pages.Count < maxPages)
            {
                var page = await TrustAsync(resident, source, after, limit).ConfigureAwait(false);
                pages.Add(page);
                after = page.Next;
                if (after == null) break;
            }
            return pages;
        }

        /// <summary>
        /// Add a notification filter (null residents: every resident; SPEC §8.2). Once confirmed it
        /// is kept: a reconnect's hello carries it in <c>filters</c>, so the changes it matches
        /// while the client was away are resumed with the others, each exactly once (SPEC §9).
        /// </summary>
        public Task<Reply> SubscribeAsync(IList<string> residents, IList<string> roots = null, IList<string> changes = null, double? crossing = null)
        {
            var f = Frame("subscribe");
            f["residents"] = residents == null ? (object)"*" : Events.Ids(residents);
            if (roots != null) f["roots"] = Events.Ids(roots);
            if (changes != null) f["changes"] = Events.Ids(changes);
            if (crossing.HasValue) f["crossing"] = crossing.Value;
            return RequestAsync(f);
        }

        /// <summary>Remove residents from every filter, and exclude them from <c>"*"</c> filters (null: drop every filter; SPEC §8.3). What is left is what a reconnect restores.</summary>
        public Task<Reply> UnsubscribeAsync(IList<string> residents = null)
        {
            var f = Frame("unsubscribe");
            if (residents != null) f["residents"] = Events.Ids(residents);
            return RequestAsync(f);
        }

        /// <summary>Name residents and label actions (an event of kind <c>register</c>, see <see cref="Events.Register"/>); acked with 0 changes.</summary>
        public Task<Ack> RegisterAsync(string eventId, double day, IDictionary<string, Dictionary<string, string>> residents, IDictionary<string, Dictionary<string, string>> actions = null)
        {
            return SendEventAsync(Events.Register(eventId, day, residents, actions));
        }

        /// <summary>Declare the world's roots (an event of kind <c>schema</c>, see <see cref="Events.Schema"/>); later events that break it fail with <c>schema_violation</c>.</summary>
        public Task<Ack> DeclareSchemaAsync(string eventId, double day, string undeclared, params Dictionary<string, object>[] roots)
        {
            return SendEventAsync(Events.Schema(eventId, day, undeclared, roots));
        }

        /// <summary><paramref name="promiser"/> promises <paramref name="to"/> to do <paramref name="action"/> (an event of kind <c>promise</c>, see <see cref="Events.Promise"/>).</summary>
        public Task<Ack> PromiseAsync(string eventId, double day, string promise, string promiser, IList<string> to, string action, string subject, double? by = null)
        {
            return SendEventAsync(Events.Promise(eventId, day, promise, promiser, to, action, subject, by));
        }

        /// <summary>Set, change, achieve or abandon a resident's goal (an event of kind <c>goal</c>, see <see cref="Events.Goal"/>).</summary>
        public Task<Ack> GoalAsync(string eventId, double day, string resident, string goal, string op, string subject = null)
        {
            return SendEventAsync(Events.Goal(eventId, day, resident, goal, op, subject));
        }

        /// <summary>A page of the promises a resident made or was made, with its view of each (SPEC §10.11); <c>next</c> is the <paramref name="after"/> of the next page.</summary>
        public Task<Reply> PromisesAsync(string resident, string state = null, string after = null, int? limit = null)
        {
            return RequestAsync(Paged("promises", resident, state, after, limit));
        }

        /// <summary>A page of a resident's goals with their latest changes (SPEC §10.12).</summary>
        public Task<Reply> GoalsAsync(string resident, string state = null, string after = null, int? limit = null)
        {
            return RequestAsync(Paged("goals", resident, state, after, limit));
        }

        Dictionary<string, object> Paged(string type, string resident, string state, string after, int? limit)
        {
            var f = Frame(type);
            f["resident"] = resident;
            if (state != null) f["state"] = state;
            if (after != null) f["after"] = after;
            if (limit.HasValue) f["limit"] = limit.Value;
            return f;
        }

        /// <summary>The worlds this connection's token may open, sorted by id (SPEC §10.7): every one.</summary>
        public async Task<List<WorldInfo>> WorldsAsync()
        {
            return (await WorldsPageAsync(null, null).ConfigureAwait(false)).Worlds;
        }

        /// <summary>
        /// A page of the worlds this connection's token may open (SPEC §10.7): at most <paramref name="limit"/>
        /// (1–1000) after the id <paramref name="after"/>; <c>Next</c> is the <c>after</c> of the next page, null on
        /// the last. A sidecar may hold 10,000 worlds: list them a page at a time.
        /// </summary>
        public async Task<WorldsPage> WorldsPageAsync(string after, int? limit)
        {
            var f = Frame("worlds");
            if (after != null) f["after"] = after;
            if (limit.HasValue) f["limit"] = limit.Value;
            var reply = await Enqueue(f, null).ConfigureAwait(false);
            var page = new WorldsPage { Worlds = new List<WorldInfo>(), Next = Wire.Str(reply, "next") };
            var listed = Wire.Get(reply, "worlds") as List<object>;
            if (listed != null)
                foreach (var w in listed)
                {
                    var map = w as Dictionary<string, object>;
                    if (map != null) page.Worlds.Add(WorldInfo.From(map));
                }
            return page;
        }

        /// <summary>
        /// Copy this connection's world into the new world <paramref name="into"/>: its log up to
        /// event seq <paramref name="at"/> (all of it when null), beliefs rebuilt by replay. Writer
        /// only; <c>into</c> must not exist yet (<c>invalid_frame</c>). If a disconnect cuts it off,
        /// it is resent like any frame, and refused <c>invalid_frame</c> if the first one was done.
        /// </summary>
        public async Task<ForkedWorld> ForkAsync(string into, long? at = null)
        {
            var f = Frame("fork");
            f["into"] = into;
            if (at.HasValue) f["at"] = at.Value;
            return ForkedWorld.FromForked(await Enqueue(f, null).ConfigureAwait(false));
        }

        /// <summary>Delete <paramref name="world"/> and everything in it (naming it is the confirmation; writer only); returns what it held.</summary>
        public async Task<WorldInfo> DeleteWorldAsync(string world)
        {
            var f = Frame("delete");
            f["world"] = world;
            return WorldInfo.From(await Enqueue(f, null).ConfigureAwait(false));
        }

        /// <summary>Fill the mirror with a resident's stored beliefs (a beliefs query).</summary>
        public async Task LoadMirrorAsync(string resident)
        {
            var reply = await BeliefsAsync(resident).ConfigureAwait(false);
            inbox.Enqueue(reply); // applied by DispatchPending, on the game's thread
        }

        static Dictionary<string, object> Frame(string type)
        {
            return new Dictionary<string, object>(StringComparer.Ordinal) { { "type", type } };
        }

        // ------------------------------------------------------------------ receiving

        void Handle(Conn c, Dictionary<string, object> frame)
        {
            string type = (string)frame["type"];
            switch (type)
            {
                case "belief":
                {
                    long seq = Wire.Long(frame, "seq") ?? 0;
                    bool backlog;
                    lock (gate)
                    {
                        if (haveSeq && seq <= lastSeq) return; // already had it: exactly once
                        lastSeq = seq;
                        backlog = inBacklog;
                        if (excluded.Contains(Wire.Str(frame, "resident") ?? "")) return; // before our unsubscribe
                    }
                    inbox.Enqueue(BeliefChange.From(frame, backlog));
                    return;
                }
                case "resumed":
                {
                    var r = new Resumed { Seq = Wire.Long(frame, "seq") ?? 0, Sent = Wire.Long(frame, "sent") ?? 0 };
                    lock (gate)
                    {
                        if (r.Seq > lastSeq) lastSeq = r.Seq;
                        inBacklog = false;
                    }
                    inbox.Enqueue(r);
                    return;
                }
                case "welcome":
                    return;
                case "error":
                {
                    c.LastErrorCode = Wire.Str(frame, "code");
                    bool answers;
                    lock (gate) answers = Wire.Get(frame, "rid") != null || (Wire.Str(frame, "code") != "slow_consumer" && inFlight > 0);
                    if (!answers)
                    {
                        inbox.Enqueue(new CredenceErrorException(frame));
                        return;
                    }
                    Answer(frame, true);
                    return;
                }
                default:
                    Answer(frame, false);
                    return;
            }
        }

        void Answer(Dictionary<string, object> frame, bool error)
        {
            Item item = null;
            bool done;
            lock (gate)
            {
                var rid = Wire.Get(frame, "rid");
                foreach (var candidate in items)
                {
                    if (!candidate.Sent) break;
                    if (rid is long && (long)rid == candidate.Rid) { item = candidate; break; }
                }
                if (item == null)
                {
                    // No rid we sent: the oldest frame in flight (replies come in request order).
                    var head = items.First;
                    if (head != null && head.Value.Sent) item = head.Value;
                }
                if (item == null)
                {
                    inbox.Enqueue(new CredenceErrorException(new Dictionary<string, object>
                    {
                        { "type", "error" }, { "code", "unexpected_reply" }, { "message", "a " + frame["type"] + " frame answers nothing we sent" },
                    }));
                    return;
                }
                if (!error)
                {
                    if (item.Joined == null) item.Joined = frame;
                    else
                    {
                        string[] lists;
                        if (PagedLists.TryGetValue((string)frame["type"], out lists))
                            foreach (var name in lists)
                            {
                                var more = Wire.Get(frame, name) as List<object>;
                                var all = Wire.Get(item.Joined, name) as List<object>;
                                if (more != null && all != null) all.AddRange(more);
                                else if (more != null) item.Joined[name] = more;
                            }
                        if ((string)frame["type"] == "narrative") JoinNarrative(item.Joined, frame);
                        item.Joined["part"] = Wire.Get(frame, "part");
                        item.Joined["more"] = Wire.Get(frame, "more");
                    }
                    item.Parts++;
                    if (Wire.Bool(frame, "more")) return;
                }
                items.Remove(item);
                if (item.EventId != null) eventsById.Remove(item.EventId);
                inFlight--;
                done = !error;
                if (done && !item.Replay && item.Type == "subscribe") Subscribed(item.Frame);
                if (done && !item.Replay && item.Type == "unsubscribe") Unsubscribed(Wire.Get(item.Frame, "residents") as List<object>);
                Pump();
            }
            if (item.Replay)
            {
                if (error) inbox.Enqueue(new CredenceErrorException(frame));
                return;
            }
            if (error) item.Done.TrySetException(new CredenceErrorException(frame));
            else item.Done.TrySetResult(item.Joined);
        }

        // The sidecar's bookkeeping of SPEC §8.2–8.3, mirrored (under the gate) once confirmed.
        void Subscribed(Dictionary<string, object> frame)
        {
            var kept = new Dictionary<string, object>(StringComparer.Ordinal);
            foreach (var key in new[] { "residents", "roots", "changes", "crossing" })
            {
                var value = Wire.Get(frame, key);
                if (value != null) kept[key] = value;
            }
            filters.Add(kept);
            var residents = Wire.Get(frame, "residents") as List<object>;
            if (residents == null) excluded.Clear();
            else foreach (var r in residents) excluded.Remove((string)r);
        }

        void Unsubscribed(List<object> residents)
        {
            if (residents == null)
            {
                filters.Clear();
                excluded.Clear();
                return;
            }
            var gone = new HashSet<string>(StringComparer.Ordinal);
            foreach (var r in residents) gone.Add((string)r);
            var kept = new List<Dictionary<string, object>>();
            foreach (var f in filters)
            {
                var listed = Wire.Get(f, "residents") as List<object>;
                if (listed == null)
                {
                    kept.Add(f);
                    excluded.UnionWith(gone);
                    continue;
                }
                var rest = listed.FindAll(r => !gone.Contains((string)r));
                if (rest.Count == 0) continue;
                var edited = new Dictionary<string, object>(f, StringComparer.Ordinal);
                edited["residents"] = rest;
                kept.Add(edited);
            }
            filters = kept;
        }

        // ------------------------------------------------------------------ the game's thread

        /// <summary>
        /// Hand the queued notifications to the game, on the calling thread (Unity: call it from
        /// Update). Updates the mirror, raises BeliefChanged / ResumeCompleted / Connected / ConnectionLost /
        /// ErrorReceived. Returns how many were dispatched.
        /// </summary>
        public int DispatchPending(int max = int.MaxValue)
        {
            int n = 0;
            object next;
            while (n < max && inbox.TryDequeue(out next))
            {
                n++;
                var change = next as BeliefChange;
                if (change != null)
                {
                    if (options.KeepMirror) mirror.Apply(change);
                    var h = BeliefChanged;
                    if (h != null) h(change);
                    continue;
                }
                var beliefs = next as Reply;
                if (beliefs != null)
                {
                    mirror.Load(beliefs);
                    continue;
                }
                var resumed = next as Resumed;
                if (resumed != null)
                {
                    var h = ResumeCompleted;
                    if (h != null) h(resumed);
                    continue;
                }
                var welcome = next as Welcome;
                if (welcome != null)
                {
                    var h = Connected;
                    if (h != null) h(welcome);
                    continue;
                }
                var gone = next as Disconnected;
                if (gone != null)
                {
                    var h = ConnectionLost;
                    if (h != null) h(gone);
                    continue;
                }
                var error = next as CredenceErrorException;
                if (error != null)
                {
                    var h = ErrorReceived;
                    if (h != null) h(error);
                }
            }
            lock (gate)
            {
                if (room != null && inbox.Count <= options.MaxPendingNotifications / 2)
                {
                    room.TrySetResult(true);
                    room = null;
                }
            }
            return n;
        }
    }
}
