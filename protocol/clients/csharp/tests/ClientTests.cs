// The C# client's test program: exits 0 when every check passed, 1 otherwise.
//
//   mono CredenceTests.exe vectors VECTORS.json
//       the codec against every vector: valid ones decode to their JSON (types included) and
//       re-encode to their bytes (canonical ones byte for byte); invalid bad_frame ones and
//       every strict prefix of a valid one are refused; the others decode (a bad field only).
//   mono CredenceTests.exe session URL VECTORS.json [TRANSCRIPT.msgpack]
//       replay the scripted session of vectors/README.md against a sidecar on an empty
//       database: every server vector must come back; with the transcript written by
//       protocol.vectors.generate, every step must bring exactly its frames.
//   mono CredenceTests.exe client URL WRITER_TOKEN READER_TOKEN
//       the client against a sidecar started with those tokens: auth, acks, refusals,
//       notifications, window, paging, inbound backpressure, reconnect + resume + resend,
//       a sidecar crash and restart (asked of the runner on stdout: "CONTROL kill" /
//       "CONTROL start", answered with a line on stdin), the mirror against the sidecar.

using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net.WebSockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Credence.Tests
{
    public static class Program
    {
        static int failures;
        static int checks;

        static void Check(bool ok, string what)
        {
            checks++;
            if (!ok)
            {
                failures++;
                Console.WriteLine("FAIL: " + what);
            }
        }

        public static int Main(string[] args)
        {
            try
            {
                switch (args.Length > 0 ? args[0] : "")
                {
                    case "vectors": Vectors(args[1]); break;
                    case "session": Session(new Uri(args[1]), args[2], args.Length > 3 ? args[3] : null).Wait(); break;
                    case "client": ClientScenario(new Uri(args[1]), args[2], args[3]).Wait(); break;
                    default:
                        Console.WriteLine("usage: vectors FILE | session URL FILE [TRANSCRIPT] | client URL WTOKEN RTOKEN");
                        return 2;
                }
            }
            catch (Exception e)
            {
                failures++;
                Console.WriteLine("FAIL: unexpected exception: " + e);
            }
            Console.WriteLine((failures == 0 ? "OK" : "FAILED") + ": " + checks + " checks, " + failures + " failures");
            return failures == 0 ? 0 : 1;
        }

        // ------------------------------------------------------------------ helpers

        /// <summary>Equal values of equal types all the way down (1, 1.0 and true all differ).</summary>
        public static bool Same(object a, object b)
        {
            if (a == null || b == null) return a == null && b == null;
            if (a.GetType() != b.GetType()) return false;
            var da = a as Dictionary<string, object>;
            if (da != null)
            {
                var db = (Dictionary<string, object>)b;
                if (da.Count != db.Count) return false;
                foreach (var kv in da)
                {
                    object other;
                    if (!db.TryGetValue(kv.Key, out other) || !Same(kv.Value, other)) return false;
                }
                return true;
            }
            var la = a as List<object>;
            if (la != null)
            {
                var lb = (List<object>)b;
                if (la.Count != lb.Count) return false;
                for (int i = 0; i < la.Count; i++) if (!Same(la[i], lb[i])) return false;
                return true;
            }
            if (a is string) return string.CompareOrdinal((string)a, (string)b) == 0;
            return a.Equals(b);
        }

        static string Show(object v)
        {
            if (v == null) return "null";
            var d = v as Dictionary<string, object>;
            if (d != null) return "{" + string.Join(", ", d.Select(kv => kv.Key + ": " + Show(kv.Value))) + "}";
            var l = v as List<object>;
            if (l != null) return "[" + string.Join(", ", l.Select(Show)) + "]";
            if (v is string) return "\"" + v + "\"";
            if (v is double) return ((double)v).ToString("R", CultureInfo.InvariantCulture) + "d";
            return v.ToString();
        }

        static byte[] Hex(string hex)
        {
            var b = new byte[hex.Length / 2];
            for (int i = 0; i < b.Length; i++) b[i] = Convert.ToByte(hex.Substring(2 * i, 2), 16);
            return b;
        }

        static string ToHex(byte[] b)
        {
            return BitConverter.ToString(b).Replace("-", "").ToLowerInvariant();
        }

        static List<Dictionary<string, object>> LoadVectors(string path)
        {
            var all = (List<object>)MiniJson.Parse(File.ReadAllText(path, Encoding.UTF8));
            return all.Cast<Dictionary<string, object>>().ToList();
        }

        static async Task<T> Within<T>(Task<T> task, string what, int seconds = 20)
        {
            if (await Task.WhenAny(task, Task.Delay(seconds * 1000)) != task)
                throw new TimeoutException("timed out: " + what);
            return await task;
        }

        static async Task Within(Task task, string what, int seconds = 20)
        {
            if (await Task.WhenAny(task, Task.Delay(seconds * 1000)) != task)
                throw new TimeoutException("timed out: " + what);
            await task;
        }

        static async Task Until(Func<bool> condition, string what, int seconds = 20)
        {
            var deadline = DateTime.UtcNow.AddSeconds(seconds);
            while (!condition())
            {
                if (DateTime.UtcNow > deadline) throw new TimeoutException("timed out waiting for: " + what);
                await Task.Delay(10);
            }
        }

        // ------------------------------------------------------------------ vectors

        static void Vectors(string path)
        {
            var vectors = LoadVectors(path);
            Check(vectors.Count > 100, "vectors.json holds the vectors");
            int decoded = 0, refused = 0, wellFormed = 0, exact = 0;
            foreach (var v in vectors)
            {
                string name = (string)v["name"];
                var bytes = Hex((string)v["msgpack_hex"]);
                bool valid = (bool)v["valid"];
                string code = v["error_code"] as string;
                if (valid)
                {
                    Dictionary<string, object> frame = null;
                    try { frame = MsgPack.DecodeFrame(bytes); }
                    catch (Exception e) { Check(false, name + ": a valid vector fails to decode: " + e.Message); continue; }
                    Check(Same(frame, v["json"]), name + ": decodes to its JSON, got " + Show(frame));
                    decoded++;
                    // Encoding what we decoded gives the same value back; canonical vectors byte for byte.
                    var again = MsgPack.Encode(frame);
                    Check(Same(MsgPack.DecodeFrame(again), v["json"]), name + ": re-encodes to the same value");
                    var fromJson = MsgPack.Encode((IDictionary)v["json"]);
                    if ((bool)v["canonical"])
                    {
                        Check(ToHex(fromJson) == (string)v["msgpack_hex"], name + ": encodes to exactly its bytes, got " + ToHex(fromJson));
                        exact++;
                    }
                    for (int end = 0; end < bytes.Length; end++)
                    {
                        try
                        {
                            MsgPack.DecodeFrame(bytes, 0, end);
                            Check(false, name + ": the prefix of " + end + " bytes decodes");
                            break;
                        }
                        catch (CredenceProtocolException e)
                        {
                            if (e.Code != "bad_frame") { Check(false, name + ": prefix refused with " + e.Code); break; }
                        }
                    }
                }
                else if (code == "bad_frame")
                {
                    try
                    {
                        MsgPack.DecodeFrame(bytes);
                        Check(false, name + ": an invalid vector decodes");
                    }
                    catch (CredenceProtocolException e)
                    {
                        Check(e.Code == "bad_frame", name + ": refused as bad_frame");
                        refused++;
                    }
                }
                else
                {
                    // hello_required, unsupported_protocol, invalid_frame, invalid_event, …: well-formed
                    // msgpack with a bad field, which the sidecar (not the codec) refuses.
                    try
                    {
                        var frame = MsgPack.DecodeFrame(bytes);
                        Check(Same(frame, v["json"]), name + ": decodes to its JSON");
                        wellFormed++;
                    }
                    catch (Exception e)
                    {
                        Check(false, name + ": well-formed but refused by the codec: " + e.Message);
                    }
                }
            }
            Console.WriteLine("vectors: " + decoded + " valid decoded (" + exact + " encoded byte for byte), "
                + refused + " bad_frame refused, " + wellFormed + " well-formed with a bad field decoded");
            Check(refused >= 20, "the bad_frame vectors were there to refuse");

            // The encoder refuses what the sidecar would refuse.
            var refusedByEncoder = new Dictionary<string, object>
            {
                { "bin", new byte[] { 1, 2 } },
                { "nan", double.NaN },
                { "infinity", float.PositiveInfinity },
                { "2^53", 9007199254740992L },
                { "-2^53", -9007199254740992L },
                { "ulong", ulong.MaxValue },
                { "int key map", new Dictionary<int, object> { { 1, "one" } } },
                { "lone surrogate", "\ud800" },
                { "depth 17", Nest(16) },
            };
            foreach (var kv in refusedByEncoder)
            {
                try
                {
                    MsgPack.Encode(new Dictionary<string, object> { { "type", "x" }, { "v", kv.Value } });
                    Check(false, "the encoder refuses " + kv.Key);
                }
                catch (ArgumentException) { checks++; }
            }
            var ok = MsgPack.Encode(new Dictionary<string, object> { { "type", "x" }, { "v", Nest(15) }, { "max", 9007199254740991L }, { "min", -9007199254740991L } });
            Check(MsgPack.DecodeFrame(ok).Count == 4, "depth 16 and ±(2^53−1) encode");
            // Widths: every integer boundary round-trips with the right type.
            long[] ints = { 0, 127, 128, 255, 256, 65535, 65536, 4294967295L, 4294967296L, -1, -32, -33, -128, -129, -32768, -32769, -2147483648L, -2147483649L };
            foreach (var n in ints)
            {
                var back = MsgPack.DecodeFrame(MsgPack.Encode(new Dictionary<string, object> { { "type", "x" }, { "n", n } }));
                Check(back["n"] is long && (long)back["n"] == n, "integer " + n + " round-trips");
            }
            var f = MsgPack.DecodeFrame(MsgPack.Encode(new Dictionary<string, object> { { "type", "x" }, { "d", 3.0 }, { "f", 0.5f }, { "i", 3 } }));
            Check(f["d"] is double && f["f"] is double && f["i"] is long, "floats stay floats, ints stay ints");
            var text = new string('é', 40) + "\U0001F600";
            var s = MsgPack.DecodeFrame(MsgPack.Encode(new Dictionary<string, object> { { "type", "x" }, { "s", text }, { "long", new string('x', 70000) } }));
            Check((string)s["s"] == text && ((string)s["long"]).Length == 70000, "strings (str 8, str 32, astral) round-trip");
        }

        static object Nest(int levels)
        {
            object v = 1;
            for (int i = 0; i < levels; i++) v = new List<object> { v };
            return v;
        }

        // ------------------------------------------------------------------ the scripted session

        sealed class Raw : IDisposable
        {
            readonly ClientWebSocket ws = new ClientWebSocket();
            readonly byte[] buffer = new byte[65536];

            public static async Task<Raw> Open(Uri url)
            {
                var r = new Raw();
                await r.ws.ConnectAsync(url, CancellationToken.None);
                return r;
            }

            public Task Send(byte[] data)
            {
                return ws.SendAsync(new ArraySegment<byte>(data), WebSocketMessageType.Binary, true, CancellationToken.None);
            }

            public async Task<Dictionary<string, object>> Next(int timeoutMs = 20000)
            {
                using (var cts = new CancellationTokenSource(timeoutMs))
                {
                    var all = new MemoryStream();
                    while (true)
                    {
                        var r = await ws.ReceiveAsync(new ArraySegment<byte>(buffer), cts.Token);
                        if (r.MessageType == WebSocketMessageType.Close) throw new IOException("closed " + ws.CloseStatus);
                        all.Write(buffer, 0, r.Count);
                        if (r.EndOfMessage) break;
                    }
                    var data = all.ToArray();
                    return MsgPack.DecodeMap(data, 0, data.Length);
                }
            }

            public async Task<bool> Quiet(int ms)
            {
                try
                {
                    await Next(ms);
                    return false;
                }
                catch (OperationCanceledException) { return true; }
                catch (WebSocketException) { return true; }
            }

            public void Dispose()
            {
                try { ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "", CancellationToken.None).Wait(2000); } catch (Exception) { }
                ws.Abort();
                ws.Dispose();
            }
        }

        /// <summary>A reply ends a step: any frame but a notification, unless more parts follow.</summary>
        static bool EndsStep(Dictionary<string, object> f)
        {
            var type = (string)f["type"];
            return type != "belief" && type != "resumed" && !Wire.Bool(f, "more");
        }

        static async Task Session(Uri url, string vectorsPath, string transcriptPath)
        {
            var vectors = LoadVectors(vectorsPath);
            var byName = vectors.ToDictionary(v => (string)v["name"]);
            var sends = new List<KeyValuePair<int, byte[]>>();
            sends.Add(new KeyValuePair<int, byte[]>(1, Hex((string)byName["client.hello.subscribe_all"]["msgpack_hex"])));
            foreach (var v in vectors)
                if ((string)v["direction"] == "client" && (v["context"] as string) == "session")
                    sends.Add(new KeyValuePair<int, byte[]>(1, Hex((string)v["msgpack_hex"])));
            sends.Add(new KeyValuePair<int, byte[]>(2, Hex((string)byName["client.hello.resume"]["msgpack_hex"])));

            var steps = new List<List<Dictionary<string, object>>>();
            var received = new List<Dictionary<string, object>>();
            foreach (int connNo in new[] { 1, 2 })
            {
                using (var raw = await Raw.Open(url))
                {
                    foreach (var send in sends.Where(s => s.Key == connNo))
                    {
                        await raw.Send(send.Value);
                        var got = new List<Dictionary<string, object>>();
                        while (true)
                        {
                            var f = await raw.Next();
                            got.Add(f);
                            // A hello's reply is the welcome, then, with resume, a backlog ending in resumed.
                            string type = (string)f["type"];
                            if (connNo == 2 ? type == "resumed" : EndsStep(f)) break;
                        }
                        steps.Add(got);
                        received.AddRange(got);
                    }
                    Check(await raw.Quiet(300), "connection " + connNo + ": nothing after the last reply");
                }
            }
            Console.WriteLine("session: " + sends.Count + " frames sent, " + received.Count + " received");

            // Every server vector came back (welcome: its server field names the running version).
            int found = 0, written = 0, total = 0;
            foreach (var v in vectors.Where(v => (string)v["direction"] == "server"))
            {
                var want = (Dictionary<string, object>)v["json"];
                bool any = received.Any(g =>
                {
                    if ((string)want["type"] == "welcome" && (string)g["type"] == "welcome")
                    {
                        var a = new Dictionary<string, object>(g);
                        var b = new Dictionary<string, object>(want);
                        a.Remove("server");
                        b.Remove("server");
                        return Same(a, b);
                    }
                    return Same(g, want);
                });
                string name = (string)v["name"];
                bool literal = name.StartsWith("server.error.") && !received.Any(g => Wire.Str(g, "code") == Wire.Str(want, "code"));
                // A few error vectors are written out, not sent in the session (hello_required,
                // unauthorized, forbidden, slow_consumer, …): the vectors say which by their absence.
                total++;
                if (literal) { written++; continue; }
                Check(any, name + ": the sidecar sent this frame in the session");
                if (any) found++;
            }
            Console.WriteLine("session: " + found + " of " + total + " server vectors received as written ("
                + written + " error vectors are only written out)");
            Check(found == total - written && written <= 9, "every server vector of the session came back");

            if (transcriptPath != null)
            {
                var data = File.ReadAllBytes(transcriptPath);
                var t = MsgPack.DecodeMap(data, 0, data.Length);
                var tsteps = ((List<object>)t["steps"]).Cast<Dictionary<string, object>>().ToList();
                Check(tsteps.Count == steps.Count, "the transcript has as many steps as the replay (" + tsteps.Count + " vs " + steps.Count + ")");
                for (int i = 0; i < Math.Min(tsteps.Count, steps.Count); i++)
                {
                    Check((string)tsteps[i]["send"] == ToHex(sends[i].Value), "step " + i + ": the same frame was sent");
                    var expect = (List<object>)tsteps[i]["expect"];
                    var got = steps[i];
                    bool same = expect.Count == got.Count;
                    for (int j = 0; same && j < got.Count; j++)
                    {
                        var e = (Dictionary<string, object>)expect[j];
                        var g = got[j];
                        if ((string)g["type"] == "welcome")
                        {
                            e = new Dictionary<string, object>(e);
                            g = new Dictionary<string, object>(g);
                            e.Remove("server");
                            g.Remove("server");
                        }
                        same = Same(e, g);
                    }
                    Check(same, "step " + i + " (" + ToHex(sends[i].Value).Substring(0, Math.Min(40, 2 * sends[i].Value.Length)) + "…): exactly the transcript's frames; got "
                        + string.Join(" | ", got.Select(Show)) + " expected " + string.Join(" | ", expect.Select(Show)));
                }
                Console.WriteLine("session: " + steps.Count + " steps compared with the transcript, frame for frame");
            }
        }

        // ------------------------------------------------------------------ the client against a sidecar

        static void Control(string what)
        {
            Console.WriteLine("CONTROL " + what);
            Console.Out.Flush();
            var answer = Console.In.ReadLine();
            if (answer != "ok") throw new InvalidOperationException("the runner answered " + answer + " to " + what);
        }

        static async Task<Exception> Refusal(Task task)
        {
            try
            {
                await Within(task, "a refusal");
                return null;
            }
            catch (Exception e)
            {
                return e;
            }
        }

        static async Task ClientScenario(Uri url, string writerToken, string readerToken)
        {
            var gate = new TaskCompletionSource<bool>();
            gate.SetResult(true);
            Func<int, CancellationToken, Task> delay = async (attempt, cancel) =>
            {
                await gate.Task;
                await Task.Delay(50, cancel);
            };

            // -- auth: a wrong token is fatal (4001), no retry loop
            var bad = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = "wrong" });
            var badError = await Refusal(bad.ConnectAsync()) as CredenceConnectionException;
            Check(badError != null && badError.CloseCode == 4001 && badError.Code == "unauthorized",
                "a wrong token: CredenceConnectionException 4001 unauthorized, got " + badError);
            Check(bad.Connections == 0, "no connection with a wrong token");

            // -- a reader, token in the Authorization header
            var reader = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = readerToken, TokenInHeader = true, ReconnectDelay = delay });
            var rw = await Within(reader.ConnectAsync(), "reader hello");
            Check(rw.Role == "reader" && rw.Auth == "token", "the reader token gives role reader, auth token");
            var forbidden = await Refusal(reader.SendEventAsync(Events.Tick("r-1", 1))) as CredenceErrorException;
            Check(forbidden != null && forbidden.Code == "forbidden" && forbidden.EventId == "r-1", "a reader's event fails with forbidden");
            Check(reader.State == ConnectionState.Open, "the reader stays connected after forbidden");

            // -- the game's writer client: everything from seq 0 into the mirror
            var main = new CredenceClient(new CredenceOptions
            {
                Url = url, World = "town", Token = writerToken, SubscribeAll = true, ResumeFrom = 0,
                MaxInFlight = 16, ReconnectDelay = delay, ClientName = "csharp-test",
            });
            var seen = new List<BeliefChange>();
            var resumes = new List<Resumed>();
            var welcomes = new List<Welcome>();
            var losses = new List<Disconnected>();
            var stray = new List<CredenceErrorException>();
            int dispatcher = -1;
            bool offThread = false;
            main.BeliefChanged += c => { seen.Add(c); if (Thread.CurrentThread.ManagedThreadId != dispatcher) offThread = true; };
            main.ResumeCompleted += r => resumes.Add(r);
            main.Connected += w => welcomes.Add(w);
            main.ConnectionLost += d => losses.Add(d);
            main.ErrorReceived += e => stray.Add(e);
            Action pump = () =>
            {
                dispatcher = Thread.CurrentThread.ManagedThreadId;
                main.DispatchPending();
            };

            var welcome = await Within(main.ConnectAsync(), "writer hello");
            Check(welcome.Role == "writer" && welcome.World == "town" && welcome.Seq == 0 && welcome.MaxFrame == 262144,
                "welcome: writer in town at seq 0, max_frame 262144");

            var ack = await Within(main.SendEventAsync(Events.Say("e-1", 1, "bo", new[] { "mira", "kai" }, "water:well", "poisoned", "The well is poisoned", "well")), "ack e-1");
            Check(ack.EventId == "e-1" && !ack.Duplicate && ack.Changes == 4 && ack.Seq == 4, "ack of e-1: 4 changes, seq 4");
            await Until(() => { pump(); return seen.Count >= 4 && resumes.Count >= 1; }, "notifications of e-1");
            Check(resumes.Count == 1 && resumes[0].Sent == 0, "ResumeFrom 0 on an empty world: an empty backlog");
            var formed = seen.FirstOrDefault(c => c.Resident == "mira" && c.Root == "water:well");
            Check(formed != null && formed.Change == "formed" && (string)formed.Value == "poisoned" && formed.PrevValue == null
                && formed.Confidence == 58 && formed.PrevConfidence == null && formed.State == "influencing" && formed.PrevState == null
                && formed.SourceKind == "hearsay" && formed.Source == "bo" && formed.Day == 1.0 && formed.EventId == "e-1"
                && formed.EvidenceId == "e-1/mira" && !formed.FromBacklog,
                "a typed belief notification: mira formed water:well = poisoned at 58 from bo; got " + formed);
            Check(!offThread, "notifications are raised on the thread that calls DispatchPending");
            MirroredBelief mb;
            Check(main.Mirror.TryGet("mira", "water:well", out mb) && mb.Confidence == 58 && (string)mb.Value == "poisoned", "the mirror holds mira's belief");

            // -- refusals fail their task; the connection survives
            var act = Events.Act("x-1", 2, "mira", "fetch_water", "completed");
            act["claim"] = Events.Claim("water:well", "clean");
            var cv = await Refusal(main.SendEventAsync(act)) as CredenceErrorException;
            Check(cv != null && cv.Code == "contract_violation" && cv.Reason == "act_claim_given" && cv.EventId == "x-1", "an act with a claim: contract_violation act_claim_given");
            var noSubject = Events.Observe("x-2", 2, new[] { "mira" }, "water:well", "clean", "");
            var ie = await Refusal(main.SendEventAsync(noSubject)) as CredenceErrorException;
            Check(ie != null && ie.Code == "invalid_event", "an empty subject: invalid_event");
            var dup = await Within(main.SendEventAsync(Events.Say("e-1", 1, "bo", new[] { "mira" }, "water:well", "poisoned", "x")), "dup");
            Check(dup.Duplicate && dup.Changes == 0 && dup.Seq == null, "resending e-1: duplicate, 0 changes, no seq");
            var twice1 = main.SendEventAsync(Events.Observe("e-2", 3, new[] { "mira" }, "water:well", "clean", "The doctor drank from the well"));
            var twice2 = main.SendEventAsync(Events.Observe("e-2", 3, new[] { "mira" }, "water:well", "clean", "The doctor drank from the well"));
            var a1 = await Within(twice1, "e-2");
            var a2 = await Within(twice2, "e-2 again");
            Check(!a1.Duplicate && !a2.Duplicate && a1.Seq == a2.Seq, "the same event_id sent twice while pending is one event with one ack");
            var nf = await Refusal(main.BeliefsAsync("nobody")) as CredenceErrorException;
            Check(nf != null && nf.Code == "not_found", "beliefs of an unknown resident: not_found");
            try
            {
                GC.KeepAlive(main.SendEventAsync(new Dictionary<string, object> { { "type", "event" }, { "kind", "tick" }, { "day", 1 } }));
                Check(false, "an event without event_id is refused locally");
            }
            catch (ArgumentException) { checks++; }

            // -- the window: 400 events at once, at most 16 on the wire; acks in order; paged replies
            var subject = new string('s', 1500);
            var burst = new List<Task<Ack>>();
            for (int i = 0; i < 400; i++)
                burst.Add(main.SendEventAsync(Events.Observe("lore-" + i, 4, new[] { "mira" }, "lore:" + i.ToString("D3"), i, subject + i)));
            Check(main.QueuedFrames > 16 && main.InFlight <= 16, "a burst waits in the client beyond the window of 16");
            var acks = await Within(Task.WhenAll(burst), "400 acks", 60);
            Check(acks.All(a => !a.Duplicate && a.Changes == 1), "400 events, one change each");
            Check(acks.Zip(acks.Skip(1), (x, y) => y.Seq > x.Seq).All(b => b), "acks in send order (seq increasing)");
            Check(main.MaxInFlightSeen <= 16 && main.MaxInFlightSeen >= 8, "at most 16 frames were ever in flight (max " + main.MaxInFlightSeen + ")");
            await Until(() => { pump(); return seen.Count(c => c.Root.StartsWith("lore:")) == 400; }, "400 notifications");

            var beliefs = await Within(main.BeliefsAsync("mira"), "beliefs mira");
            var items = beliefs.Items("beliefs");
            Check(beliefs.Type == "beliefs" && beliefs.Parts > 3, "a long beliefs reply came in " + beliefs.Parts + " parts");
            Check(items.Count == 402 && !Wire.Bool(beliefs.Frame, "more"), "the parts are joined: 402 beliefs, got " + items.Count);
            Check(items.Zip(items.Skip(1), (x, y) => BeliefMirror.CompareCodePoints((string)x["root"], (string)y["root"]) < 0).All(b => b), "joined beliefs in root order");
            var after = await Within(main.BeliefsAsync("mira", "lore:399"), "beliefs after");
            Check(after.Items("beliefs").Select(b => (string)b["root"]).SequenceEqual(new[] { "water:well" }), "beliefs after lore:399: only water:well");
            var explain = await Within(main.ExplainAsync("mira", "water:well"), "explain");
            Check(explain.Type == "explanation" && explain.Items("evidence").Count == 2 && explain.Items("history").Count == 2, "explain: 2 evidence, 2 changes");
            var dist = await Within(main.DistributionAsync("water:well"), "distribution");
            Check(dist.Items("residents").Count == 2, "distribution of water:well: mira and kai");
            var narrative = await Within(main.NarrativeAsync("kai", 600, "en"), "narrative");
            Check(narrative.Items("sections").Count == 9 && ((string)narrative.Frame["text"]).Contains("poisoned"), "narrative: 9 sections, mentions the rumour");
            var graph = await Within(main.GraphAsync("mira", "water:well"), "graph");
            Check(graph.Items("nodes").Count > 0 && graph.Items("edges").Count > 0, "graph: nodes and edges");
            var trust = await Within(main.TrustAsync("mira"), "trust");
            Check(trust.Type == "trust" && (double)trust.Frame["default"] == 0.6, "trust table: default 0.6");
            var sub = await Within(main.SubscribeAsync(new[] { "kai" }, new[] { "water:" }, new[] { "doubted" }), "subscribe");
            Check(sub.Type == "subscribed" && sub.Frame["seq"] is long, "subscribe: subscribed with a seq");

            // -- inbound backpressure: a client that does not dispatch stops reading at 50 pending
            var slow = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = writerToken, SubscribeAll = true, MaxPendingNotifications = 50, ReconnectDelay = delay });
            var slowSeen = new List<long>();
            slow.BeliefChanged += c => slowSeen.Add(c.Seq);
            var sw = await Within(slow.ConnectAsync(), "slow hello");
            var flood = new List<Task<Ack>>();
            for (int i = 0; i < 300; i++)
                flood.Add(main.SendEventAsync(Events.Observe("flood-" + i, 5, new[] { "kai" }, "flood:" + i, true, "flood")));
            await Within(Task.WhenAll(flood), "flood acks", 60);
            await Task.Delay(300);
            Check(slow.PendingNotifications <= 50, "an undispatched client holds at most 50 notifications (" + slow.PendingNotifications + ")");
            int maxPending = 0;
            await Until(() =>
            {
                maxPending = Math.Max(maxPending, slow.PendingNotifications);
                slow.DispatchPending(10);
                return slowSeen.Count >= 300;
            }, "slow client catches up");
            Check(maxPending <= 50, "pending notifications never above 50 (max " + maxPending + ")");
            Check(slowSeen.Count == 300 && slowSeen.Zip(slowSeen.Skip(1), (x, y) => y == x + 1).All(b => b) && slowSeen[0] == sw.Seq + 1,
                "the slow client got all 300 notifications, in seq order, none lost");
            await slow.CloseAsync();

            // -- reconnect: the connection drops; others write meanwhile; the client queues events;
            //    it comes back with resume and resend
            pump();
            gate = new TaskCompletionSource<bool>();
            var other = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = writerToken });
            await Within(other.ConnectAsync(), "other hello");
            main.DropConnection();
            await Until(() => main.State == ConnectionState.Reconnecting, "main notices the drop");
            var meanwhile = new List<Task<Ack>>();
            for (int i = 0; i < 20; i++)
                meanwhile.Add(other.SendEventAsync(Events.Say("gossip-" + i, 6, "kai", new[] { "mira" }, "gossip:" + i, "yes", "gossip")));
            await Within(Task.WhenAll(meanwhile), "other's acks");
            var queued = new List<Task<Ack>>();
            for (int i = 0; i < 3; i++)
                queued.Add(main.SendEventAsync(Events.Observe("offline-" + i, 6, new[] { "mira" }, "offline:" + i, "x", "while offline")));
            Check(main.UnackedEvents == 3 && queued.All(t => !t.IsCompleted), "3 events wait while reconnecting");
            int resumesBefore = resumes.Count;
            gate.SetResult(true);
            var offline = await Within(Task.WhenAll(queued), "acks after reconnect");
            Check(offline.All(a => !a.Duplicate && a.Changes == 1), "queued events are sent after the reconnect");
            await Until(() => { pump(); return resumes.Count > resumesBefore && seen.Any(c => c.EventId == "offline-2"); }, "resume and live notifications");
            Check(main.Connections == 2 && welcomes.Count == 2 && welcomes[1].Reconnected, "one reconnect, with a second welcome");
            long written = (await Task.WhenAll(meanwhile)).Sum(a => (long)a.Changes);
            Check(written == 40 && resumes[resumesBefore].Sent == written, "the resume backlog held the " + written + " changes written meanwhile (got " + resumes[resumesBefore].Sent + ")");
            Check(seen.Where(c => c.EventId.StartsWith("gossip-")).All(c => c.FromBacklog), "the missed changes came in the backlog");
            Check(losses.Count == 1 && !losses[0].Final, "one connection loss, not final");

            // -- the sidecar crashes (SIGKILL) and restarts on the same database
            Control("kill");
            await Until(() => main.State == ConnectionState.Reconnecting, "main notices the crash");
            var down = new List<Task<Ack>>();
            for (int i = 0; i < 5; i++)
                down.Add(main.SendEventAsync(Events.Observe("down-" + i, 7, new[] { "kai" }, "down:" + i, "x", "while the sidecar was down")));
            var resent = main.SendEventAsync(Events.Observe("lore-7", 4, new[] { "mira" }, "lore:007", 7, subject + 7));
            await Task.Delay(500); // some reconnect attempts fail: connection refused
            Check(main.State == ConnectionState.Reconnecting && down.All(t => !t.IsCompleted), "events wait while the sidecar is down");
            Control("start");
            var downAcks = await Within(Task.WhenAll(down), "acks after the restart", 30);
            Check(downAcks.All(a => !a.Duplicate && a.Changes == 1), "events queued during the crash are applied after the restart");
            var resentAck = await Within(resent, "resent lore-7");
            Check(resentAck.Duplicate && resentAck.Changes == 0, "an event already stored is acked as a duplicate");
            await Until(() => reader.State == ConnectionState.Open && reader.Connections == 2, "the reader reconnects too", 30);
            await Until(() => { pump(); return seen.Any(c => c.EventId == "down-4"); }, "notifications after the restart");

            // -- every change exactly once, in seq order, across two reconnects
            var seqs = seen.Select(c => c.Seq).ToList();
            Check(seqs.Count == seqs.Distinct().Count(), "no notification twice");
            Check(seqs.Zip(seqs.Skip(1), (x, y) => y == x + 1).All(b => b) && seqs[0] == 1 && seqs.Last() == main.LastSeq,
                "notifications 1…" + main.LastSeq + " contiguous (" + seqs.Count + ")");

            // -- the mirror equals the sidecar's beliefs
            foreach (var resident in new[] { "mira", "kai", "bo" })
            {
                var stored = (await Within(main.BeliefsAsync(resident), "beliefs " + resident)).Items("beliefs");
                var mirrored = main.Mirror.Of(resident).Where(m => !m.Root.StartsWith("trust:")).ToList();
                bool equal = stored.Count == mirrored.Count;
                for (int i = 0; equal && i < stored.Count; i++)
                    equal = (string)stored[i]["root"] == mirrored[i].Root && Same(stored[i]["value"], mirrored[i].Value)
                        && (long)stored[i]["confidence"] == mirrored[i].Confidence && (string)stored[i]["state"] == mirrored[i].State
                        && (string)stored[i]["subject"] == mirrored[i].Subject;
                Check(equal, "the mirror of " + resident + " equals the sidecar's beliefs (" + stored.Count + " vs " + mirrored.Count + ")");
            }
            Check(stray.Count == 0, "no stray errors: " + string.Join("; ", stray.Select(e => e.Message)));

            // -- closing
            await main.CloseAsync();
            Check(main.State == ConnectionState.Closed, "closed");
            try
            {
                await main.SendEventAsync(Events.Tick("after-close", 9));
                Check(false, "sending after close fails");
            }
            catch (CredenceConnectionException) { checks++; }
            await reader.CloseAsync();
            await other.CloseAsync();
            Console.WriteLine("client: " + seqs.Count + " notifications, " + main.Connections + " connections");
        }
    }
}
