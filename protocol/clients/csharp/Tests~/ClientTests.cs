// The C# client's test program: exits 0 when every check passed, 1 otherwise.
//
//   mono CredenceTests.exe vectors VECTORS.json
//       the codec against every vector: valid ones decode to their JSON (types included) and
//       re-encode to their bytes (canonical ones byte for byte); invalid bad_frame ones and
//       every strict prefix of a valid one are refused; the others decode (a bad field only).
//   mono CredenceTests.exe session URL VECTORS.json [TRANSCRIPT.msgpack]
//       replay the scripted session of vectors/README.md against a sidecar on an empty
//       database: every server vector must come back; with the transcript written by
//       tools.vectors, every step must bring exactly its frames.
//   mono CredenceTests.exe client URL WRITER_TOKEN READER_TOKEN
//       the client against a sidecar started with those tokens: auth, acks, refusals,
//       notifications, window, paging, inbound backpressure, reconnect + resume + resend,
//       a sidecar crash and restart (asked of the runner on stdout: "CONTROL kill" /
//       "CONTROL start", answered with a line on stdin), the mirror against the sidecar, and
//       a restart with other tokens ("CONTROL retoken": the reconnect is refused 4001, for good).
//   mono CredenceTests.exe lifecycle URL VECTORS.json
//       against an open sidecar: register (the names appear in the narrative), a schema
//       (ack Warnings, schema_violation), fork / worlds / delete, what the builders send.
//   mono CredenceTests.exe graph URL
//       GraphAsync with after and limit, GraphPagesAsync walking every page, a bad limit;
//       TrustAsync with after and limit, TrustPagesAsync, a bad cursor.
//   mono CredenceTests.exe misremember URL
//       against a sidecar started with --misremember 1 --seed 3: misremembered notifications
//       and their decoded detail (BeliefChange.Misremembered), and the detail parser.
//   mono CredenceTests.exe bench URL N
//       figures only (no assertion on speed): N observe events through the client, window 256,
//       with a second client subscribed to every resident; events/s acked, notifications/s,
//       and the codec's decode rate on a belief frame.

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
    public static partial class Program
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
                    case "lifecycle": Lifecycle(new Uri(args[1]), args[2]).Wait(); break;
                    case "misremember": Misremember(new Uri(args[1])).Wait(); break;
                    case "promises": Promises(new Uri(args[1])).Wait(); break;
                    case "graph": GraphPages(new Uri(args[1])).Wait(); break;
                    case "bench": Bench(new Uri(args[1]), int.Parse(args[2])).Wait(); break;
                    case "filters": Filters(new Uri(args[1])).Wait(); break;
                    case "focus": Focus(new Uri(args[1])).Wait(); break;
                    case "launcher": Launcher(args[1], args[2], args[3]).Wait(); break;
                    case "full": Full(new Uri(args[1])).Wait(); break;
                    default:
                        Console.WriteLine("usage: vectors FILE | session URL FILE [TRANSCRIPT] | client URL WTOKEN RTOKEN | lifecycle URL VECTORS | misremember URL | bench URL N | filters URL | focus URL | launcher PYTHON ROOT DB | full URL");
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
            try
            {
                MsgPack.Encode(new Dictionary<string, object> { { "type", "event" }, { "witnesses", new List<object> { "a", new byte[1] } } });
                Check(false, "bin in a list is refused");
            }
            catch (ArgumentException e) { Check(e.Message.StartsWith("frame.witnesses[1]: "), "the encoder names where: " + e.Message); }
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
                // unauthorized, forbidden, slow_consumer, clock_backwards, …): the vectors say which by their absence.
                total++;
                if (literal) { written++; continue; }
                Check(any, name + ": the sidecar sent this frame in the session");
                if (any) found++;
            }
            Console.WriteLine("session: " + found + " of " + total + " server vectors received as written ("
                + written + " error vectors are only written out)");
            Check(found == total - written && written <= 11, "every server vector of the session came back");

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

            // The (empty) backlog is read after the welcome: an event sent before `resumed` may be
            // committed before that read and come in it, exactly once (SPEC §9). Wait for it.
            await Until(() => { pump(); return resumes.Count >= 1; }, "resumed");
            Check(resumes.Count == 1 && resumes[0].Sent == 0, "ResumeFrom 0 on an empty world: an empty backlog");
            var ack = await Within(main.SendEventAsync(Events.Say("e-1", 1, "bo", new[] { "mira", "kai" }, "water:well", "poisoned", "The well is poisoned", "well")), "ack e-1");
            Check(ack.EventId == "e-1" && !ack.Duplicate && ack.Changes == 4 && ack.Seq == 4, "ack of e-1: 4 changes, seq 4");
            await Until(() => { pump(); return seen.Count >= 4; }, "notifications of e-1");
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
            var clock = System.Diagnostics.Stopwatch.StartNew();
            for (int i = 0; i < 400; i++)
                burst.Add(main.SendEventAsync(Events.Observe("lore-" + i, 4, new[] { "mira" }, "lore:" + i.ToString("D3"), i, subject + i)));
            Check(main.QueuedFrames > 16 && main.InFlight <= 16, "a burst waits in the client beyond the window of 16");
            var acks = await Within(Task.WhenAll(burst), "400 acks", 60);
            Console.WriteLine("burst: 400 events of ~1.5 KB acked in " + clock.ElapsedMilliseconds + " ms ("
                + (400 / clock.Elapsed.TotalSeconds).ToString("F0", CultureInfo.InvariantCulture) + " events/s, window 16)");
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
            var latest = await Within(main.ExplainAsync("mira", "water:well", 1), "explain, latest only");
            Check(latest.Items("evidence").Count == 1 && latest.Items("history").Count == 1
                && Convert.ToInt64(latest.Frame["evidence_total"]) == 2 && Convert.ToInt64(latest.Frame["history_total"]) == 2,
                "explain with limit 1: the latest piece of evidence and change, of 2 each");
            var firstPage = await Within(main.BeliefsAsync("mira", new BeliefsFilter { Limit = 300 }), "beliefs page 1");
            var lastRoot = (string)firstPage.Items("beliefs").Last()["root"];
            var secondPage = await Within(main.BeliefsAsync("mira", new BeliefsFilter { After = lastRoot, Limit = 300 }), "beliefs page 2");
            Check(firstPage.Items("beliefs").Count == 300 && secondPage.Items("beliefs").Count == 102
                && firstPage.Items("beliefs").Concat(secondPage.Items("beliefs")).Select(b => (string)b["root"]).SequenceEqual(items.Select(b => (string)b["root"])),
                "beliefs a page at a time (Limit, then After the last root): 300 + 102, the same as whole");
            var dist = await Within(main.DistributionAsync("water:well"), "distribution");
            Check(dist.Items("residents").Count == 2, "distribution of water:well: mira and kai");
            var narrative = await Within(main.NarrativeAsync("kai", 600, "en"), "narrative");
            Check(narrative.Items("sections").Count == 12 && ((string)narrative.Frame["text"]).Contains("poisoned"), "narrative: 12 sections, mentions the rumour");
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

            // -- a client that stops reading long enough is closed 4008 slow_consumer by the sidecar;
            //    it resumes from the last seq it received and loses nothing
            var stall = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = writerToken, SubscribeAll = true, MaxPendingNotifications = 20, ReconnectDelay = delay });
            var stallSeen = new List<long>();
            var stallLost = new List<Disconnected>();
            var stallErrors = new List<string>();
            stall.BeliefChanged += c => stallSeen.Add(c.Seq);
            stall.ConnectionLost += d => stallLost.Add(d);
            stall.ErrorReceived += e => stallErrors.Add(e.Code);
            var stw = await Within(stall.ConnectAsync(), "stall hello");
            var big = new string('b', 3900);
            var heavy = new List<Task<Ack>>();
            for (int i = 0; i < 1500; i++)
                heavy.Add(main.SendEventAsync(Events.Observe("big-" + i, 5, new[] { "stall-r" }, "big:" + i, i, big + i)));
            var heavyAcks = await Within(Task.WhenAll(heavy), "1500 heavy acks", 60);
            long lastHeavy = heavyAcks.Last().Seq.Value;
            await Task.Delay(300);
            Check(stall.PendingNotifications <= 20 && stall.Connections == 1, "the stalled client stopped reading at 20 pending");
            await Until(() => { pump(); stall.DispatchPending(); return stallSeen.Count > 0 && stallSeen.Last() >= lastHeavy; }, "the stalled client catches up", 60);
            Check(stallSeen.Count == 1500 && stallSeen[0] == stw.Seq + 1 && stallSeen.Zip(stallSeen.Skip(1), (x, y) => y == x + 1).All(b => b),
                "after a stall and a reconnect: all 1500 notifications exactly once, in seq order (" + stallSeen.Count + ")");
            Check(stall.Connections >= 2 && stallLost.Count >= 1, "the stalled client was disconnected and came back (" + stall.Connections + " connections)");
            Console.WriteLine("stall: closed with " + string.Join(", ", stallLost.Select(d => d.CloseCode.ToString())) + "; errors: " + string.Join(", ", stallErrors));
            await stall.CloseAsync();

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
            var offlineQuery = main.DistributionAsync("offline:2");
            int resumesBefore = resumes.Count;
            gate.SetResult(true);
            var offline = await Within(Task.WhenAll(queued), "acks after reconnect");
            Check(offline.All(a => !a.Duplicate && a.Changes == 1), "queued events are sent after the reconnect");
            var oq = await Within(offlineQuery, "a query sent while reconnecting");
            Check(oq.Items("residents").Count == 1 && (string)oq.Items("residents")[0]["resident"] == "mira",
                "a query sent while reconnecting is answered after the events queued before it");
            await Until(() => { pump(); return resumes.Count > resumesBefore && seen.Any(c => c.EventId == "offline-2"); }, "resume and live notifications");
            Check(main.Connections == 2 && welcomes.Count == 2 && welcomes[1].Reconnected, "one reconnect, with a second welcome");
            long written = (await Task.WhenAll(meanwhile)).Sum(a => (long)a.Changes);
            // The queued events go out right after the new welcome: one that commits before the
            // backlog is read to its end is part of it too (SPEC §9), so the backlog holds the 40,
            // plus up to the 3 offline changes (a busy machine showed 41 and 43).
            long backlogSent = resumes[resumesBefore].Sent;
            long offlineChanges = offline.Sum(a => (long)a.Changes);
            Check(written == 40 && backlogSent >= written && backlogSent <= written + offlineChanges,
                "the resume backlog held the " + written + " changes written meanwhile, and at most the " + offlineChanges + " offline ones (got " + backlogSent + ")");
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
            // -- a mirror seeded by a beliefs query instead of a resume from 0
            var late = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = readerToken, Subscribe = new[] { "mira" } });
            await Within(late.ConnectAsync(), "late hello");
            await Within(late.LoadMirrorAsync("mira"), "load mirror");
            late.DispatchPending();
            var lateMirror = late.Mirror.Of("mira");
            var mainMirror = main.Mirror.Of("mira").Where(m => !m.Root.StartsWith("trust:")).ToList();
            Check(lateMirror.Count == mainMirror.Count && lateMirror.Zip(mainMirror, (x, y) => x.Root == y.Root && Same(x.Value, y.Value) && x.Confidence == y.Confidence).All(b => b),
                "LoadMirrorAsync fills the mirror like a full resume does (" + lateMirror.Count + " beliefs)");
            await late.CloseAsync();

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

            // -- the sidecar comes back with other tokens: the reconnect is refused 4001, for good
            var readerLost = new List<Disconnected>();
            reader.ConnectionLost += d => readerLost.Add(d);
            Control("retoken");
            Exception revoked = null;
            try { revoked = await Refusal(reader.TrustAsync("mira")); }
            catch (CredenceConnectionException e) { revoked = e; }
            var rc = revoked as CredenceConnectionException;
            Check(rc != null && (rc.CloseCode == 4001 || rc.CloseCode == null), "a query pending when the token is revoked fails with CredenceConnectionException, got " + revoked);
            await Until(() => { reader.DispatchPending(); return reader.State == ConnectionState.Failed && readerLost.Any(d => d.Final); }, "the reader gives up");
            Check(readerLost.Last().Final && readerLost.Last().CloseCode == 4001 && readerLost.Last().Reason == "unauthorized", "its last ConnectionLost is final: 4001 unauthorized");
            int attempts = reader.Connections;
            await Task.Delay(300);
            Check(reader.Connections == attempts && reader.State == ConnectionState.Failed, "no reconnect loop after 4001");
            await reader.CloseAsync();

            // -- a game loop: one thread with a SynchronizationContext (as Unity's main thread);
            //    awaits resume on it and every notification is raised on it, by DispatchPending
            var game = new GameThread();
            var gameErrors = new List<string>();
            var gameThread = new Thread(() => game.Run(async () =>
            {
                var client = new CredenceClient(new CredenceOptions { Url = url, World = "town", Token = "new-w-secret", Subscribe = new[] { "ann" } });
                client.BeliefChanged += c => { if (!game.OnThread) gameErrors.Add("BeliefChanged off the game thread"); game.Beliefs++; };
                var w = await client.ConnectAsync();
                if (!game.OnThread) gameErrors.Add("ConnectAsync resumed off the game thread");
                if (w.Role != "writer") gameErrors.Add("the new writer token is not a writer: " + w.Role);
                var a = await client.SendEventAsync(Events.Observe("game-1", 7, new[] { "ann" }, "mill", "burnt", "The mill burnt down"));
                if (!game.OnThread) gameErrors.Add("SendEventAsync resumed off the game thread");
                if (a.Changes != 1) gameErrors.Add("game-1 changes " + a.Changes);
                for (int frame = 0; frame < 500 && game.Beliefs == 0; frame++)
                {
                    client.DispatchPending();  // Update()
                    await Task.Delay(10);      // the next frame
                }
                await client.CloseAsync();
            }));
            gameThread.Start();
            await Task.Run(() => gameThread.Join(30000));
            Check(game.Beliefs == 1 && game.Error == null && gameErrors.Count == 0,
                "a game loop: awaits resume and notifications arrive on the game thread (" + string.Join("; ", gameErrors) + game.Error + ")");
            await other.CloseAsync();
            Console.WriteLine("client: " + seqs.Count + " notifications, " + main.Connections + " connections");
        }

        // ------------------------------------------------------------------ register, schema, worlds

        static async Task Lifecycle(Uri url, string vectorsPath)
        {
            var vectors = LoadVectors(vectorsPath);
            Func<string, Dictionary<string, object>> vector = name => (Dictionary<string, object>)vectors.First(v => (string)v["name"] == name)["json"];
            var client = new CredenceClient(new CredenceOptions { Url = url, World = "town", Subscribe = new[] { "kai" } });
            await Within(client.ConnectAsync(), "hello");

            // -- register: the narrative names residents
            var names = new Dictionary<string, Dictionary<string, string>>
            {
                { "mira", Events.Names("Mira", "米拉") },
                { "kai", Events.Names("Kai") },
            };
            var labels = new Dictionary<string, Dictionary<string, string>> { { "fetch_water", Events.Names("fetch water", "打水") } };
            var reg = await Within(client.RegisterAsync("g-1", 1, names, labels), "register");
            Check(!reg.Duplicate && reg.Changes == 0 && reg.Seq == null && reg.Warnings.Count == 0, "register: acked with 0 changes, no warnings");
            await Within(client.SendEventAsync(Events.Say("s-1", 1, "mira", new[] { "kai" }, "water:well", "poisoned", "the well is poisoned")), "say");
            var en = (string)(await Within(client.NarrativeAsync("kai"), "narrative en")).Frame["text"];
            Check(en.Contains("Mira") && !System.Text.RegularExpressions.Regex.IsMatch(en, "\\bmira\\b"), "kai's narrative names Mira, not mira: " + en);
            var zh = (string)(await Within(client.NarrativeAsync("kai", null, "zh-Hant"), "narrative zh")).Frame["text"];
            Check(zh.Contains("米拉"), "in zh-Hant: 米拉: " + zh);
            var badNames = new Dictionary<string, Dictionary<string, string>> { { "bo", new Dictionary<string, string> { { "fr", "Bo" } } } };
            var badReg = await Refusal(client.RegisterAsync("g-2", 1, badNames)) as CredenceErrorException;
            Check(badReg != null && badReg.Code == "invalid_event" && badReg.EventId == "g-2", "names in another language: invalid_event");

            // -- a schema: warnings for undeclared roots, schema_violation for an undeclared value
            var schema = await Within(client.DeclareSchemaAsync("sc-1", 2, "warn",
                Events.SchemaRoot("water:well", new object[] { "clean", "poisoned" }, Events.Names("the well water"), importance: 0.5),
                Events.SchemaRoot("location:", mutable: true)), "schema");
            Check(schema.Changes == 0 && schema.Warnings.Count == 0, "schema: acked, 0 changes");
            var warned = await Within(client.SendEventAsync(Events.Observe("sc-2", 2, new[] { "kai" }, "weather:today", "rain", "it rains")), "warned");
            Check(warned.Changes == 1 && warned.Warnings.Count == 1 && warned.Warnings[0].Contains("weather:today"),
                "an undeclared root: stored, and the ack warns: " + string.Join("; ", warned.Warnings));
            var typo = await Refusal(client.SendEventAsync(Events.Observe("sc-3", 2, new[] { "kai" }, "water:well", "poisond", "typo"))) as CredenceErrorException;
            Check(typo != null && typo.Code == "schema_violation" && typo.Reason == "value_not_allowed" && typo.EventId == "sc-3",
                "a value outside the declared values: schema_violation value_not_allowed");
            var fixedAck = await Within(client.SendEventAsync(Events.Observe("sc-3", 2, new[] { "kai" }, "water:well", "clean", "fixed")), "fixed");
            Check(!fixedAck.Duplicate && fixedAck.Warnings.Count == 0, "nothing of the refused event was stored: its id is free");
            await Within(client.DeclareSchemaAsync("sc-4", 2, "refuse", Events.SchemaRoot("water:")), "refusing schema");
            var undeclared = await Refusal(client.SendEventAsync(Events.Observe("sc-5", 2, new[] { "kai" }, "weather:today", "sun", "sun"))) as CredenceErrorException;
            Check(undeclared != null && undeclared.Code == "schema_violation" && undeclared.Reason == "undeclared_root", "refuse: schema_violation undeclared_root");

            // -- worlds, fork, delete
            var before = await Within(client.WorldsAsync(), "worlds");
            Check(before.Count == 1 && before[0].World == "town" && before[0].Events == 6, "worlds: town with 6 events: " + string.Join(", ", before));
            var forked = await Within(client.ForkAsync("town-slot-1", 2), "fork");
            Check(forked.World == "town-slot-1" && forked.Source == "town" && forked.At == 2 && forked.Events == 2 && forked.Day == 1.0,
                "fork at 2: a world of 2 events from town, day 1: " + forked);
            var whole = await Within(client.ForkAsync("town-copy"), "fork all");
            Check(whole.At == null && whole.Events == 6, "a fork without at keeps the whole log");
            var listed = await Within(client.WorldsAsync(), "worlds again");
            Check(listed.Select(w => w.World).SequenceEqual(new[] { "town", "town-copy", "town-slot-1" }), "worlds lists the forks, sorted: " + string.Join(", ", listed));
            var page1 = await Within(client.WorldsPageAsync(null, 2), "worlds page 1");
            var page2 = await Within(client.WorldsPageAsync(page1.Next, 2), "worlds page 2");
            Check(page1.Worlds.Select(w => w.World).SequenceEqual(new[] { "town", "town-copy" }) && page1.Next == "town-copy"
                && page2.Worlds.Select(w => w.World).SequenceEqual(new[] { "town-slot-1" }) && page2.Next == null,
                "worlds a page at a time: 2, then 1 after next, next null on the last");
            var exists = await Refusal(client.ForkAsync("town-copy")) as CredenceErrorException;
            Check(exists != null && exists.Code == "invalid_frame", "a fork into an existing world: invalid_frame");
            var slot = new CredenceClient(new CredenceOptions { Url = url, World = "town-slot-1" });
            await Within(slot.ConnectAsync(), "slot hello");
            var slotBeliefs = (await Within(slot.BeliefsAsync("kai"), "slot beliefs")).Items("beliefs");
            Check(slotBeliefs.Select(b => (string)b["root"]).SequenceEqual(new[] { "believes:mira:water:well", "water:well" }), "the fork's beliefs were rebuilt from its 2 events: " + string.Join(", ", slotBeliefs.Select(b => Show(b))));
            await slot.CloseAsync();
            var deleted = await Within(client.DeleteWorldAsync("town-slot-1"), "delete");
            Check(deleted.World == "town-slot-1" && deleted.Events == 2, "delete: what the world held: " + deleted);
            var after = await Within(client.WorldsAsync(), "worlds after delete");
            Check(after.Select(w => w.World).SequenceEqual(new[] { "town", "town-copy" }), "the deleted world is gone: " + string.Join(", ", after));
            var gone = await Refusal(client.DeleteWorldAsync("town-slot-1")) as CredenceErrorException;
            Check(gone != null && gone.Code == "not_found", "deleting it again: not_found");
            Check(client.State == ConnectionState.Open, "the connection stays open");

            // -- the builders send what the vectors say
            var register = Events.Register("g-2", 23, new Dictionary<string, Dictionary<string, string>> { { "bo", Events.Names("Bo", "阿博") } });
            register.Remove("day");
            register["day"] = 23L;
            Check(Same(Reorder(register), Reorder(vector("client.event.register"))), "Events.Register builds client.event.register: " + Show(register));
            var empty = Events.Schema("sc-4", 23, "accept");
            empty["day"] = 23L;
            Check(Same(Reorder(empty), Reorder(vector("client.event.schema"), "rid")), "Events.Schema builds client.event.schema: " + Show(empty));
            await client.CloseAsync();
        }

        /// <summary>A copy without the given keys (Same compares maps regardless of key order).</summary>
        static Dictionary<string, object> Reorder(Dictionary<string, object> frame, params string[] drop)
        {
            var copy = new Dictionary<string, object>(frame);
            foreach (var k in drop) copy.Remove(k);
            return copy;
        }

        // ------------------------------------------------------------------ graph pages

        static async Task GraphPages(Uri url)
        {
            var client = new CredenceClient(new CredenceOptions { Url = url, World = "graphs" });
            await Within(client.ConnectAsync(), "hello");
            for (int n = 1; n <= 5; n++)
                await Within(client.SendEventAsync(Events.Say("g-" + n, n, "teller" + n, new[] { "mira" }, "water:well", "poisoned", "The well is poisoned")), "say");
            var first = await Within(client.GraphAsync("mira", "water:well", null, 2), "graph page");
            var events = first.Items("nodes").Where(n => (string)n["type"] == "event").Select(n => (string)n["event_id"]).ToList();
            Check(events.SequenceEqual(new[] { "g-1", "g-2" }), "the first page: the first two tellings, got " + string.Join(",", events));
            Check(first.Next != null, "the first page names the next");
            var second = await Within(client.GraphAsync("mira", "water:well", first.Next, 2), "graph after");
            var later = second.Items("nodes").Where(n => (string)n["type"] == "event").Select(n => (string)n["event_id"]).ToList();
            Check(later.SequenceEqual(new[] { "g-3", "g-4" }), "the next page continues after the cursor, got " + string.Join(",", later));
            var pages = await Within(client.GraphPagesAsync("mira", "water:well", 2), "every page");
            Check(pages.Select(p => p.Items("nodes").Count(n => (string)n["type"] == "event")).SequenceEqual(new[] { 2, 2, 1 }), "every page: 2, 2 and 1 event nodes");
            Check(pages.Last().Next == null && pages.All(p => p.Items("nodes").Count(n => (string)n["type"] == "claim") == 1), "the claim node on each page; the last has no next");
            var bad = await Refusal(client.GraphAsync("mira", null, null, 1001)) as CredenceErrorException;
            Check(bad != null && bad.Code == "invalid_frame", "limit 1001: invalid_frame");
            // The trust table a page at a time (SPEC §10.6): Mira trusts each teller, one per page.
            for (int n = 1; n <= 3; n++)
                await Within(client.SendEventAsync(Events.Trust("tr-" + n, 6, "mira", "teller" + n, 0.1 * n)), "trust");
            var trustFirst = await Within(client.TrustAsync("mira", null, null, 2), "trust page");
            Check(trustFirst.Items("entries").Select(e => (string)e["source"]).SequenceEqual(new[] { "teller1", "teller2" }) && trustFirst.Next == "teller2", "the first trust page: teller1, teller2; next teller2");
            var trustPages = await Within(client.TrustPagesAsync("mira", null, 1), "every trust page");
            Check(trustPages.Count == 3 && trustPages.Last().Next == null && trustPages.SelectMany(pg => pg.Items("entries")).Select(e => (string)e["source"]).SequenceEqual(new[] { "teller1", "teller2", "teller3" }), "every trust page, one entry each, in source order");
            var badAfter = await Refusal(client.TrustAsync("mira", null, "teller1:")) as CredenceErrorException;
            Check(badAfter != null && badAfter.Code == "invalid_frame", "a trust cursor with an empty topic: invalid_frame");
            await client.CloseAsync();
        }

        // ------------------------------------------------------------------ promises and goals

        static async Task Promises(Uri url)
        {
            var client = new CredenceClient(new CredenceOptions { Url = url, World = "town", Subscribe = new[] { "kai" } });
            var seen = new List<BeliefChange>();
            client.BeliefChanged += c => seen.Add(c);
            await Within(client.ConnectAsync(), "hello");
            var made = await Within(client.PromiseAsync("p-1", 1, "fence", "bo", new[] { "kai" }, "mend_fence", "mend the fence", 3), "promise");
            Check(made.Changes == 2, "a promise: one change per party");
            var tick = await Within(client.SendEventAsync(Events.Tick("t-1", 4)), "tick");
            await Until(() => { client.DispatchPending(); return seen.Count > 0 && seen.Last().Seq == tick.Seq; }, "the notifications");
            var overdue = seen.Where(c => c.Change == ChangeKinds.Promise && (string)c.Value == "overdue").ToList();
            Check(overdue.Count == 1 && overdue[0].Root == "promise:fence" && overdue[0].Detail == "deadline", "kai's view went overdue on the deadline");
            var page = await Within(client.PromisesAsync("kai", "overdue"), "promises");
            var entries = (List<object>)page.Frame["promises"];
            Check(entries.Count == 1 && (string)((Dictionary<string, object>)entries[0])["promiser"] == "bo", "the promises page lists it");
            await Within(client.GoalAsync("g-1", 4, "kai", "raft", "set", "build a raft"), "goal");
            var again = await Refusal(client.GoalAsync("g-2", 4, "kai", "raft", "set", "again")) as CredenceErrorException;
            Check(again != null && again.Code == "invalid_event" && again.EventId == "g-2", "setting an active goal again: invalid_event");
            var goals = (List<object>)(await Within(client.GoalsAsync("kai"), "goals")).Frame["goals"];
            Check(goals.Count == 1 && (string)((Dictionary<string, object>)goals[0])["state"] == "active", "the goals page lists it");
            await client.CloseAsync();
        }

        // ------------------------------------------------------------------ misremembered

        static async Task Misremember(Uri url)
        {
            var client = new CredenceClient(new CredenceOptions { Url = url, World = "town", Subscribe = new[] { "mira" } });
            var seen = new List<BeliefChange>();
            client.BeliefChanged += c => seen.Add(c);
            await Within(client.ConnectAsync(), "hello");
            Ack last = null;
            for (int day = 1; day <= 3; day++)
            {
                var e = Events.Observe("m-" + day, day, new[] { "mira" }, "key:where", "counter", "the key is on the counter");
                e["places"] = new List<object> { "spot" + day };
                last = await Within(client.SendEventAsync(e), "m-" + day);
            }
            await Until(() => { client.DispatchPending(); return seen.Count > 0 && seen.Last().Seq == last.Seq; }, "the notifications");
            var drifts = seen.Where(c => c.Change == ChangeKinds.Misremembered).ToList();
            Check(drifts.Count == 2, "two recalls, two misremembered changes: " + string.Join(", ", seen.Select(c => c.Change)));
            foreach (var d in drifts)
            {
                var m = d.Misremembered;
                Check(m != null && Array.IndexOf(new[] { "places", "people", "remembered_day" }, m.Field) >= 0 && !Same(Box(m.Before), Box(m.After)),
                    "the drift's detail decodes: " + d.Detail + " → " + m);
                Check((string)d.Value == "counter" && d.PrevValue as string == "counter", "never the value");
            }
            Check(seen[0].Change == ChangeKinds.Formed && seen[0].Misremembered == null, "a formed change has no drift");
            MirroredBelief mb;
            Check(client.Mirror.TryGet("mira", "key:where", out mb) && (string)mb.Value == "counter", "the mirror keeps the value");

            var places = MisrememberedDetail.Parse("{\"field\": \"places\", \"before\": [\"caf\\u00e9\", \"mill\"], \"after\": [\"米\\\"\"]}");
            Check(places != null && places.Field == "places" && ((List<string>)places.Before).SequenceEqual(new[] { "café", "mill" })
                && ((List<string>)places.After).SequenceEqual(new[] { "米\"" }), "the parser reads lists of names with escapes: " + places);
            var dayShift = MisrememberedDetail.Parse("{\"field\": \"remembered_day\", \"before\": 3.0, \"after\": 1.5}");
            Check(dayShift != null && (double)dayShift.Before == 3.0 && (double)dayShift.After == 1.5, "the parser reads a day shift");
            Check(MisrememberedDetail.Parse("implant") == null && MisrememberedDetail.Parse(null) == null
                && MisrememberedDetail.Parse("{\"field\": \"value\", \"before\": 1, \"after\": 2}") == null
                && MisrememberedDetail.Parse("{\"field\": \"places\", \"before\": [1], \"after\": []}") == null
                && MisrememberedDetail.Parse("{\"field\": \"people\", \"before\": [], \"after\": []} x") == null,
                "anything else is not a drift");
            await client.CloseAsync();
        }

        static object Box(object v)
        {
            var names = v as List<string>;
            return names == null ? v : names.Cast<object>().ToList();
        }

        // ------------------------------------------------------------------ figures

        static async Task Bench(Uri url, int n)
        {
            var writer = new CredenceClient(new CredenceOptions { Url = url, World = "bench", MaxInFlight = 256 });
            var watcher = new CredenceClient(new CredenceOptions { Url = url, World = "bench", SubscribeAll = true, KeepMirror = true });
            await writer.ConnectAsync();
            await watcher.ConnectAsync();
            int seen = 0;
            watcher.BeliefChanged += c => seen++;
            var clock = System.Diagnostics.Stopwatch.StartNew();
            var acks = new List<Task<Ack>>(n);
            for (int i = 0; i < n; i++)
                acks.Add(writer.SendEventAsync(Events.Observe("b-" + i, 1 + i / 1000, new[] { "r" + (i % 50) }, "k:" + (i % 500), i % 7, "bench event " + i)));
            await Task.WhenAll(acks);
            double ackSeconds = clock.Elapsed.TotalSeconds;
            while (seen < n)
            {
                watcher.DispatchPending();
                await Task.Delay(1);
            }
            double allSeconds = clock.Elapsed.TotalSeconds;
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture,
                "bench: {0} events acked in {1:F2} s ({2:F0} events/s); {3} notifications dispatched by {4:F2} s ({5:F0}/s); mirror {6} beliefs",
                n, ackSeconds, n / ackSeconds, seen, allSeconds, seen / allSeconds, watcher.Mirror.Count));
            var frame = MsgPack.Encode(new Dictionary<string, object>
            {
                { "type", "belief" }, { "seq", 12345L }, { "resident", "mira" }, { "root", "water:well" }, { "value", "poisoned" },
                { "prev_value", null }, { "change", "formed" }, { "confidence", 58L }, { "prev_confidence", null }, { "state", "influencing" },
                { "prev_state", null }, { "source_kind", "hearsay" }, { "source", "bo" }, { "subject", "The well is poisoned" },
                { "prev_subject", null }, { "event_id", "e-1" }, { "evidence_id", "e-1/mira" }, { "day", 1.0 }, { "detail", null },
            });
            clock.Restart();
            int rounds = 200000;
            for (int i = 0; i < rounds; i++) MsgPack.DecodeFrame(frame);
            Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "bench: codec decodes a {0}-byte belief frame {1:F0} times/s",
                frame.Length, rounds / clock.Elapsed.TotalSeconds));
            await writer.CloseAsync();
            await watcher.CloseAsync();
        }
    }

    /// <summary>A single thread with a SynchronizationContext that runs posted work in order, as Unity's main thread.</summary>
    sealed class GameThread : SynchronizationContext
    {
        readonly System.Collections.Concurrent.BlockingCollection<KeyValuePair<SendOrPostCallback, object>> work =
            new System.Collections.Concurrent.BlockingCollection<KeyValuePair<SendOrPostCallback, object>>();
        int threadId;
        public int Beliefs;
        public Exception Error;

        public bool OnThread { get { return Thread.CurrentThread.ManagedThreadId == threadId; } }

        public override void Post(SendOrPostCallback d, object state)
        {
            work.Add(new KeyValuePair<SendOrPostCallback, object>(d, state));
        }

        public void Run(Func<Task> body)
        {
            threadId = Thread.CurrentThread.ManagedThreadId;
            SetSynchronizationContext(this);
            var task = body();
            task.ContinueWith(t => work.CompleteAdding(), TaskScheduler.Default);
            foreach (var item in work.GetConsumingEnumerable()) item.Key(item.Value);
            if (task.IsFaulted) Error = task.Exception.InnerException;
        }
    }
}
