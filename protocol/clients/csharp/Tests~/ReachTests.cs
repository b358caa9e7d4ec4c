// The C# client's test program, continued: filters added after the hello resumed across a
// kill -9, the typed narrative focus and beliefs filters, and the SidecarProcess launcher.
//
//   mono CredenceTests.exe filters URL
//       filters added with SubscribeAsync (one edited and one "*" exclusion by UnsubscribeAsync)
//       survive "CONTROL kill" / "CONTROL start" mid-stream: the reconnect's hello restores them
//       and the resumed backlog plus the live stream hold exactly the changes they match, once.
//   mono CredenceTests.exe focus URL
//       NarrativeAsync(focus: …) and BeliefsAsync(BeliefsFilter) against a real sidecar.
//   mono CredenceTests.exe launcher PYTHON ROOT DB
//       SidecarProcess.StartAsync runs `PYTHON -m sidecar.cli serve --port 0`, restarts it on the
//       same port after a SIGKILL (the client reconnects), and Dispose stops it for good.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;

namespace Credence.Tests
{
    public static partial class Program
    {
        /// <summary>The i-th event of a stream that forms, doubts and corrects beliefs of mira, kai, ana and bo.</summary>
        static Dictionary<string, object> StreamEvent(int i)
        {
            double day = 1 + i / 10.0;
            string id = "s-" + i;
            switch (i % 4)
            {
                case 0: return Events.Observe(id, day, new[] { "mira", "kai" }, "water:w" + (i % 5), i % 8 < 4 ? "clean" : "dirty", "water");
                case 1: return Events.Say(id, day, "bo", new[] { "mira", "kai", "ana" }, "water:w" + (i % 5), "poisoned", "poisoned");
                case 2: return Events.Say(id, day, "ana", new[] { "kai", "mira" }, "mill:m" + (i % 3), i % 6 < 3 ? "open" : "shut", "mill");
                default: return Events.Observe(id, day, new[] { "ana", "bo" }, "road:r" + (i % 7), (long)i, "road");
            }
        }

        sealed class Filter
        {
            public string[] Residents; // null: "*"
            public string[] Roots = new string[0];
            public string[] Changes = new string[0];
            public double? Crossing;
        }

        /// <summary>SPEC §8.2–8.3 written out: does a change match these filters, minus the excluded?</summary>
        static bool Wanted(BeliefChange c, IList<Filter> filters, ISet<string> excluded)
        {
            if (excluded.Contains(c.Resident)) return false;
            return filters.Any(f =>
            {
                if (f.Residents != null && !f.Residents.Contains(c.Resident)) return false;
                if (f.Roots.Length > 0 && !f.Roots.Any(p => c.Root.StartsWith(p, StringComparison.Ordinal))) return false;
                if (f.Changes.Length > 0 && !f.Changes.Contains(c.Change)) return false;
                if (f.Crossing.HasValue)
                {
                    int before = c.PrevConfidence ?? -1;
                    return (before < f.Crossing.Value) != (c.Confidence < f.Crossing.Value);
                }
                return true;
            });
        }

        static async Task Filters(Uri url)
        {
            bool shut = false; // while shut, the reader dials a closed port: it stays away
            var closed = new Uri("ws://127.0.0.1:9/");
            Func<int, CancellationToken, Task> fast = (attempt, cancel) => Task.Delay(50, cancel);
            var writer = new CredenceClient(new CredenceOptions { Url = url, World = "town", KeepMirror = false, ReconnectDelay = fast });
            var reader = new CredenceClient(new CredenceOptions
            {
                UrlSource = () => shut ? closed : url, World = "town", Subscribe = new[] { "bo" }, ReconnectDelay = fast,
            });
            var got = new List<BeliefChange>();
            var resumed = new List<Resumed>();
            reader.BeliefChanged += got.Add;
            reader.ResumeCompleted += resumed.Add;
            const int total = 240;
            try
            {
                await Within(writer.ConnectAsync(), "writer connect");
                await Within(reader.ConnectAsync(), "reader connect");
                await Within(reader.SubscribeAsync(new[] { "mira", "ana" }, new[] { "water:" }), "subscribe water");
                await Within(reader.SubscribeAsync(null, null, new[] { "doubted", "corrected" }), "subscribe doubts");
                await Within(reader.SubscribeAsync(new[] { "kai" }, new[] { "mill:" }, null, 60), "subscribe crossing");
                await Within(reader.UnsubscribeAsync(new[] { "ana" }), "unsubscribe ana");
                var held = reader.Subscriptions.Select(f => Show(f)).ToList();
                Check(held.SequenceEqual(new[]
                {
                    "{residents: [\"bo\"]}",
                    "{residents: [\"mira\"], roots: [\"water:\"]}",
                    "{residents: \"*\", changes: [\"doubted\", \"corrected\"]}",
                    "{residents: [\"kai\"], roots: [\"mill:\"], crossing: 60d}",
                }), "the filters as the sidecar holds them: " + string.Join(" ", held));

                var acks = new List<Task<Ack>>();
                for (int i = 0; i < total; i++)
                {
                    acks.Add(writer.SendEventAsync(StreamEvent(i)));
                    if (i != total / 2) continue;
                    // kill -9 mid-stream, with events in flight; the same database and port again.
                    await Until(() => { reader.DispatchPending(); return got.Count >= 20; }, "notifications before the kill");
                    shut = true;
                    Control("kill");
                    await Until(() => reader.State == ConnectionState.Reconnecting && writer.State == ConnectionState.Reconnecting, "both reconnecting");
                    Control("start");
                }
                await Within(Task.WhenAll(acks), "every ack", 60);
                shut = false;
                await Until(() => { reader.DispatchPending(); return resumed.Count == 1; }, "the reader's resume", 30);
                await Within(reader.BeliefsAsync("mira"), "a round trip");
                reader.DispatchPending();

                // The oracle: every change of the world from resume 0, filtered by the SPEC's rules.
                var oracle = new CredenceClient(new CredenceOptions { Url = url, World = "town", SubscribeAll = true, ResumeFrom = 0, AutoReconnect = false });
                var all = new List<BeliefChange>();
                bool replayed = false;
                oracle.BeliefChanged += all.Add;
                oracle.ResumeCompleted += r => replayed = true;
                await Within(oracle.ConnectAsync(), "oracle connect");
                await Until(() => { oracle.DispatchPending(); return replayed; }, "the oracle's backlog");
                await oracle.CloseAsync();
                var filters = new[]
                {
                    new Filter { Residents = new[] { "bo" } },
                    new Filter { Residents = new[] { "mira" }, Roots = new[] { "water:" } },
                    new Filter { Changes = new[] { "doubted", "corrected" } },
                    new Filter { Residents = new[] { "kai" }, Roots = new[] { "mill:" }, Crossing = 60 },
                };
                var expected = all.Where(c => Wanted(c, filters, new HashSet<string> { "ana" })).Select(c => c.Seq).ToList();
                var seqs = got.Select(c => c.Seq).ToList();
                Check(expected.Count > 50, "a stream worth testing: " + expected.Count);
                Check(seqs.Distinct().Count() == seqs.Count, "no notification twice");
                Check(seqs.SequenceEqual(expected), "exactly the matching changes, in order: got " + seqs.Count + ", expected " + expected.Count
                    + "; missing " + string.Join(",", expected.Except(seqs).Take(10)) + "; extra " + string.Join(",", seqs.Except(expected).Take(10)));
                Check(resumed.Count == 1 && resumed[0].Sent > 20, "a real backlog was resumed: " + (resumed.Count > 0 ? resumed[0].Sent : -1));
                Check(got.Any(c => c.FromBacklog) && got.Any(c => !c.FromBacklog), "notifications from the backlog and live");
                Console.WriteLine("filters: " + seqs.Count + " notifications, " + (resumed.Count > 0 ? resumed[0].Sent : 0) + " from the resume backlog");
            }
            finally
            {
                await reader.CloseAsync();
                await writer.CloseAsync();
            }
        }

        static async Task Focus(Uri url)
        {
            var client = new CredenceClient(new CredenceOptions { Url = url, World = "town" });
            try
            {
                await Within(client.ConnectAsync(), "connect");
                var well = Events.Observe("f-1", 1, new[] { "mira" }, "water:well", "clean", "the well is clean");
                well["places"] = new List<object> { "well" };
                var mill = Events.Observe("f-2", 1, new[] { "mira" }, "mill:wheel", "broken", "the wheel is broken");
                mill["people"] = new List<object> { "bo" };
                await Within(client.SendEventAsync(well), "f-1");
                await Within(client.SendEventAsync(mill), "f-2");
                await Within(client.SendEventAsync(Events.Say("f-3", 2, "kai", new[] { "mira" }, "festival:day", "sunday", "the festival is on sunday")), "f-3");
                await Within(client.SendEventAsync(Events.Observe("f-4", 2, new[] { "mira" }, "road:north", "flooded", "the north road is flooded")), "f-4");

                Func<Reply, string> roots = r => string.Join(" ", r.Items("beliefs").Select(b => (string)b["root"]));
                var wet = await Within(client.BeliefsAsync("mira", new BeliefsFilter { Prefix = new[] { "water:" } }), "prefix");
                Check(roots(wet) == "water:well", "Prefix: " + roots(wet));
                var sure = await Within(client.BeliefsAsync("mira", new BeliefsFilter { MinConfidence = 70, States = new[] { "influencing" } }), "min_confidence");
                Check(roots(sure) == "believes:kai:festival:day mill:wheel road:north water:well", "MinConfidence + States: " + roots(sure));
                var bo = await Within(client.BeliefsAsync("mira", new BeliefsFilter { People = new[] { "bo" } }), "people");
                Check(roots(bo) == "mill:wheel", "People: " + roots(bo));
                var at = await Within(client.BeliefsAsync("mira", new BeliefsFilter { Places = new[] { "well" } }), "places");
                Check(roots(at) == "water:well", "Places: " + roots(at));
                var one = await Within(client.BeliefsAsync("mira", new BeliefsFilter { Root = "road:north" }), "root");
                Check(roots(one) == "road:north", "Root: " + roots(one));
                var after = await Within(client.BeliefsAsync("mira", "mill:wheel"), "after");
                Check(roots(after) == "road:north water:well", "after: " + roots(after));

                var focus = new NarrativeFocus { People = new[] { "bo" }, Places = new[] { "well" }, Roots = new[] { "road:" } };
                var n = await Within(client.NarrativeAsync("mira", 2000, "en", focus), "narrative focus");
                Check(Show(n.Frame["focus"]) == "{people: [\"bo\"], places: [\"well\"], roots: [\"road:\"], topics: []}", "focus echoed: " + Show(n.Frame["focus"]));
                var matched = new HashSet<string>();
                foreach (var section in n.Items("sections"))
                    foreach (Dictionary<string, object> entry in (List<object>)section["entries"])
                    {
                        var why = entry["why"] as Dictionary<string, object>;
                        if (why != null && why["matched"] is List<object>)
                            foreach (string m in (List<object>)why["matched"]) matched.Add(m);
                    }
                foreach (var m in new[] { "person:bo", "place:well", "root:road:" })
                    Check(matched.Contains(m), m + " matched: " + string.Join(",", matched));
                Func<Reply, string> firstBelieved = r => (string)((Dictionary<string, object>)((List<object>)r.Items("sections").First(s => (string)s["name"] == "believe")["entries"])[0])["root"];
                var plain = await Within(client.NarrativeAsync("mira"), "narrative");
                var water = await Within(client.NarrativeAsync("mira", focus: new NarrativeFocus { Roots = new[] { "water:" } }), "narrative water");
                Check(firstBelieved(plain) == "road:north", "the newest first without a focus: " + firstBelieved(plain));
                Check(firstBelieved(water) == "water:well", "what the focus names first: " + firstBelieved(water));
            }
            finally
            {
                await client.CloseAsync();
            }
        }

        /// <summary>A sidecar serving its max_connections (1). With WaitForSidecar = false a second client's
        /// ConnectAsync fails with a CredenceConnectionException (no code: try again later; Mono's WebSocket does not
        /// tell the 503). By default ConnectAsync waits: through the 503s until the first client closes, through a
        /// port where nothing listens yet, until its cancel gives up (OperationCanceledException, Idle again), or
        /// until CloseAsync (the client was closed).</summary>
        static async Task Full(Uri url)
        {
            Func<int, CancellationToken, Task> fast = (attempt, cancel) => Task.Delay(50, cancel);
            var first = new CredenceClient(new CredenceOptions { Url = url, World = "town" });
            var second = new CredenceClient(new CredenceOptions { Url = url, World = "town", WaitForSidecar = false });
            var third = new CredenceClient(new CredenceOptions { Url = url, World = "town", ReconnectDelay = fast });
            var fourth = new CredenceClient(new CredenceOptions { Url = url, World = "town", ReconnectDelay = fast });
            var fifth = new CredenceClient(new CredenceOptions { Url = url, World = "town", ReconnectDelay = fast });
            try
            {
                await Within(first.ConnectAsync(), "the first connect");
                CredenceConnectionException refused = null;
                try
                {
                    await Within(second.ConnectAsync(), "the second connect");
                }
                catch (CredenceConnectionException e)
                {
                    refused = e;
                }
                Check(refused != null && refused.Code == null && refused.Message.StartsWith("cannot connect to "),
                    "a full sidecar: a CredenceConnectionException without a code: " + (refused == null ? "none" : refused.Message));
                Check(second.State == ConnectionState.Idle, "Idle again after a failed connect: " + second.State);

                var waiting = third.ConnectAsync();
                await Task.Delay(600);
                Check(!waiting.IsCompleted && third.State == ConnectionState.Connecting,
                    "ConnectAsync waits while the sidecar is full: " + third.State + " " + waiting.Status);
                await first.CloseAsync();
                var welcome = await Within(waiting, "a connect once there is room", 30);
                Check(welcome.World == "town" && third.State == ConnectionState.Open, "welcomed once the first closed");

                // Full again (the third holds the one connection): a cancel gives up.
                bool cancelled = false;
                using (var giveUp = new CancellationTokenSource(TimeSpan.FromMilliseconds(500)))
                {
                    try
                    {
                        await Within(fourth.ConnectAsync(giveUp.Token), "a connect that is cancelled");
                    }
                    catch (OperationCanceledException)
                    {
                        cancelled = true;
                    }
                }
                Check(cancelled && fourth.State == ConnectionState.Idle, "cancelled, Idle again: " + cancelled + " " + fourth.State);

                // CloseAsync while ConnectAsync waits ends it.
                var closing = fifth.ConnectAsync();
                await Task.Delay(200);
                await fifth.CloseAsync();
                string closed = null;
                try
                {
                    await Within(closing, "a connect whose client is closed");
                }
                catch (CredenceConnectionException e)
                {
                    closed = e.Message;
                }
                Check(closed == "the client was closed" && fifth.State == ConnectionState.Closed, "closed while waiting: " + closed);
                await third.CloseAsync();

                // Nothing listening at first (a sidecar still starting): asked again until one answers.
                int asked = 0;
                var starting = new CredenceClient(new CredenceOptions
                {
                    UrlSource = () => ++asked < 4 ? new Uri("ws://127.0.0.1:9/") : url, World = "town", ReconnectDelay = fast,
                });
                try
                {
                    var late = await Within(starting.ConnectAsync(), "a connect to a sidecar that starts late", 30);
                    Check(late.World == "town" && asked == 4, "welcomed on the fourth attempt: " + asked);
                }
                finally
                {
                    await starting.CloseAsync();
                }
            }
            finally
            {
                await first.CloseAsync();
                await second.CloseAsync();
                await third.CloseAsync();
                await fourth.CloseAsync();
                await fifth.CloseAsync();
            }
        }

        static async Task Launcher(string python, string root, string db)
        {
            var sidecar = await Within(SidecarProcess.StartAsync(new SidecarOptions
            {
                Command = python, LeadingArguments = new[] { "-m", "sidecar.cli" }, WorkingDirectory = root,
                Arguments = new[] { "--db", db, "--log-level", "WARNING" }, RestartDelay = TimeSpan.FromMilliseconds(50),
            }), "the first start", 60);
            var ready = new List<Uri>();
            var exits = new List<int>();
            sidecar.Ready += u => { lock (ready) ready.Add(u); };
            sidecar.Exited += code => { lock (exits) exits.Add(code); };
            var client = new CredenceClient(new CredenceOptions
            {
                UrlSource = () => sidecar.Url, World = "town", ReconnectDelay = (a, c) => Task.Delay(50, c),
            });
            int? last = null;
            try
            {
                var first = sidecar.Url;
                Check(first.Scheme == "ws" && first.Host == "127.0.0.1" && first.Port > 0, "the printed URL: " + first);
                Check(sidecar.IsRunning && sidecar.ProcessId.HasValue, "running, with a pid");
                int pid = sidecar.ProcessId.Value;
                await Within(client.ConnectAsync(), "connect");
                await Within(client.SendEventAsync(Events.Observe("l-1", 1, new[] { "mira" }, "water:well", "clean", "clean")), "l-1");
                using (var kill = Process.Start(new ProcessStartInfo("kill", "-KILL " + pid) { UseShellExecute = false }))
                    kill.WaitForExit();
                await Until(() => { lock (ready) return ready.Count == 1; }, "the restart", 60);
                Check(sidecar.Restarts == 1, "one restart: " + sidecar.Restarts);
                Check(sidecar.Url == first, "the same port again: " + sidecar.Url);
                Check(sidecar.ProcessId != pid, "a new process");
                lock (exits) Check(exits.Count == 1, "one exit seen");
                var ack = await Within(client.SendEventAsync(Events.Observe("l-2", 2, new[] { "mira" }, "road:north", "flooded", "flooded")), "l-2", 30);
                Check(!ack.Duplicate, "a new event after the restart");
                var beliefs = await Within(client.BeliefsAsync("mira"), "beliefs");
                var listed = string.Join(" ", beliefs.Items("beliefs").Select(b => (string)b["root"]));
                Check(listed == "road:north water:well", "the same database: " + listed);
            }
            finally
            {
                await client.CloseAsync();
                last = sidecar.ProcessId;
                sidecar.Dispose();
            }
            Check(!sidecar.IsRunning, "stopped by Dispose");
            bool gone;
            try { gone = Process.GetProcessById(last.Value).HasExited; }
            catch (ArgumentException) { gone = true; }
            Check(gone, "the process is gone");
            await Task.Delay(300);
            Check(!sidecar.IsRunning && sidecar.Restarts == 1, "no restart after Dispose");
            lock (exits) Check(exits.Count == 2 && exits[1] == 0, "a clean exit on SIGTERM: " + string.Join(",", exits));
        }
    }
}
