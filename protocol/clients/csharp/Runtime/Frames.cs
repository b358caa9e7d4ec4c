// Credence C# client: typed views of the frames the sidecar sends, the errors the client
// raises, and builders for the frames a game sends (protocol/SPEC.md §5, §7, §8, §10, §12).
//
// Exceptions:
//
//   Exception
//    ├── CredenceProtocolException   the peer sent bytes the protocol refuses (code "bad_frame")
//    ├── CredenceErrorException      the sidecar answered a frame with an error frame (Code, Reason)
//    └── CredenceConnectionException the connection cannot go on: a fatal close (4001 unauthorized,
//                                    4002, 4000, 4011) or the client was closed; pending tasks fail with it
//
// Our own misuse (a frame without event_id, a value the codec cannot send) throws the usual
// ArgumentException / InvalidOperationException.

using System;
using System.Collections;
using System.Collections.Generic;

namespace Credence
{
    /// <summary>The sidecar refused a frame: an <c>error</c> frame that answered it.</summary>
    public sealed class CredenceErrorException : Exception
    {
        /// <summary>The stable error code (<c>invalid_event</c>, <c>not_found</c>, <c>forbidden</c>, …).</summary>
        public string Code { get; private set; }
        /// <summary>For <c>contract_violation</c>: which rule of the epistemic guard.</summary>
        public string Reason { get; private set; }
        public string EventId { get; private set; }
        public Dictionary<string, object> Frame { get; private set; }

        public CredenceErrorException(Dictionary<string, object> frame)
            : base(Wire.Str(frame, "code") + ": " + Wire.Str(frame, "message"))
        {
            Frame = frame;
            Code = Wire.Str(frame, "code");
            Reason = Wire.Str(frame, "reason");
            EventId = Wire.Str(frame, "event_id");
        }
    }

    /// <summary>The connection ended for good (a fatal close code, or the client was closed).</summary>
    public sealed class CredenceConnectionException : Exception
    {
        /// <summary>The WebSocket close code, when there was one (4001 unauthorized, …).</summary>
        public int? CloseCode { get; private set; }
        /// <summary>The error code of the sidecar's last error frame, if it sent one.</summary>
        public string Code { get; private set; }

        public CredenceConnectionException(string message, int? closeCode, string code) : base(message)
        {
            CloseCode = closeCode;
            Code = code;
        }
    }

    /// <summary>The sidecar's <c>welcome</c>.</summary>
    public sealed class Welcome
    {
        public string World;
        public long Seq;
        public string Server;
        /// <summary><c>"writer"</c> or <c>"reader"</c> (a reader may not send events).</summary>
        public string Role;
        /// <summary><c>"open"</c> (no tokens configured) or <c>"token"</c>.</summary>
        public string Auth;
        public long MaxFrame;
        /// <summary>True when this welcome ended a reconnect (the client resumed and resent).</summary>
        public bool Reconnected;
        public Dictionary<string, object> Frame;

        internal static Welcome From(Dictionary<string, object> f, bool reconnected)
        {
            return new Welcome
            {
                World = Wire.Str(f, "world"),
                Seq = Wire.Long(f, "seq") ?? 0,
                Server = Wire.Str(f, "server"),
                Role = Wire.Str(f, "role"),
                Auth = Wire.Str(f, "auth"),
                MaxFrame = Wire.Long(f, "max_frame") ?? 262144,
                Reconnected = reconnected,
                Frame = f,
            };
        }
    }

    /// <summary>The <c>ack</c> of an event: it and all its consequences are committed.</summary>
    public sealed class Ack
    {
        public string EventId;
        /// <summary>The id was already stored (e.g. a resend after a reconnect): nothing changed.</summary>
        public bool Duplicate;
        public int Changes;
        /// <summary>The seq of the event's last change; its changes are Seq − Changes + 1 … Seq.</summary>
        public long? Seq;
        /// <summary>For <c>propose</c>: one verdict map per edit.</summary>
        public List<object> Results;
        /// <summary>Warnings about an event that was stored anyway (e.g. a root the world's schema does not declare, when it says <c>warn</c>); empty when none.</summary>
        public List<string> Warnings;
        public Dictionary<string, object> Frame;

        internal static Ack From(Dictionary<string, object> f)
        {
            var warnings = new List<string>();
            var listed = Wire.Get(f, "warnings") as List<object>;
            if (listed != null)
                foreach (var w in listed)
                    if (w is string) warnings.Add((string)w);
            return new Ack
            {
                Warnings = warnings,
                EventId = Wire.Str(f, "event_id"),
                Duplicate = Wire.Bool(f, "duplicate"),
                Changes = (int)(Wire.Long(f, "changes") ?? 0),
                Seq = Wire.Long(f, "seq"),
                Results = Wire.Get(f, "results") as List<object>,
                Frame = f,
            };
        }
    }

    /// <summary>A <c>belief</c> notification: one change record (SPEC §8.1).</summary>
    public sealed class BeliefChange
    {
        public long Seq;
        public string Resident;
        public string Root;
        /// <summary>string, long or bool (a double for a <c>trust</c> change).</summary>
        public object Value;
        public object PrevValue;
        /// <summary>One of <see cref="ChangeKinds"/>: <c>formed</c>, <c>reinforced</c>, <c>doubted</c>, <c>anomaly</c>, <c>corrected</c>, <c>decayed</c>, <c>faded</c>, <c>intervened</c>, <c>updated</c>, <c>trust</c>, <c>misremembered</c>, <c>promise</c> or <c>goal</c>.</summary>
        public string Change;
        public int Confidence;
        public int? PrevConfidence;
        /// <summary><c>influencing</c>, <c>past</c>, <c>doubtful</c>, <c>anomalous</c> or <c>corrected</c>.</summary>
        public string State;
        public string PrevState;
        public string SourceKind;
        public string Source;
        public string Subject;
        public string PrevSubject;
        public string EventId;
        public string EvidenceId;
        public double Day;
        public string Detail;
        /// <summary>For a <c>misremembered</c> change: what drifted (decoded from <see cref="Detail"/>); null for any other change.</summary>
        public MisrememberedDetail Misremembered
        {
            get { return Change == ChangeKinds.Misremembered ? MisrememberedDetail.Parse(Detail) : null; }
        }
        /// <summary>True when it came in the backlog of a resume (before <c>resumed</c>).</summary>
        public bool FromBacklog;
        public Dictionary<string, object> Frame;

        internal static BeliefChange From(Dictionary<string, object> f, bool backlog)
        {
            var c = Wire.Long(f, "prev_confidence");
            return new BeliefChange
            {
                Seq = Wire.Long(f, "seq") ?? 0,
                Resident = Wire.Str(f, "resident"),
                Root = Wire.Str(f, "root"),
                Value = Wire.Get(f, "value"),
                PrevValue = Wire.Get(f, "prev_value"),
                Change = Wire.Str(f, "change"),
                Confidence = (int)(Wire.Long(f, "confidence") ?? 0),
                PrevConfidence = c.HasValue ? (int?)(int)c.Value : null,
                State = Wire.Str(f, "state"),
                PrevState = Wire.Str(f, "prev_state"),
                SourceKind = Wire.Str(f, "source_kind"),
                Source = Wire.Str(f, "source"),
                Subject = Wire.Text(f, "subject"),
                PrevSubject = Wire.Text(f, "prev_subject"),
                EventId = Wire.Str(f, "event_id"),
                EvidenceId = Wire.Str(f, "evidence_id"),
                Day = Wire.Double(f, "day") ?? 0.0,
                Detail = Wire.Str(f, "detail"),
                FromBacklog = backlog,
                Frame = f,
            };
        }

        public override string ToString()
        {
            return "#" + Seq + " " + Resident + " " + Root + " = " + Value + " " + Change + " "
                + (PrevConfidence.HasValue ? PrevConfidence.Value.ToString() : "—") + " → " + Confidence + " " + State;
        }
    }

    /// <summary>The change kinds of a <c>belief</c> notification (SPEC §8.1), for <see cref="BeliefChange.Change"/> and subscription filters.</summary>
    public static class ChangeKinds
    {
        public const string Formed = "formed";
        public const string Reinforced = "reinforced";
        public const string Doubted = "doubted";
        public const string Anomaly = "anomaly";
        public const string Corrected = "corrected";
        public const string Decayed = "decayed";
        public const string Faded = "faded";
        public const string Intervened = "intervened";
        /// <summary>A mutable root changed in the world.</summary>
        public const string Updated = "updated";
        /// <summary>Trust in a source changed (root <c>trust:&lt;source&gt;[:&lt;topic&gt;]</c>, with <c>%</c> and <c>:</c> in the source id percent-escaped, SPEC §8.1).</summary>
        public const string Trust = "trust";
        /// <summary>A detail drifted in recall (worlds with misremembering on); <see cref="BeliefChange.Detail"/> is a JSON map <c>{field, before, after}</c>.</summary>
        public const string Misremembered = "misremembered";
        /// <summary>A party's view of a promise moved (root <c>promise:&lt;id&gt;</c>, value the state: pending, kept, overdue, broken; detail how it was learned).</summary>
        public const string Promise = "promise";
        /// <summary>A goal was set, changed, achieved or abandoned (root <c>goal:&lt;id&gt;</c>, value its state, detail the op).</summary>
        public const string Goal = "goal";

        public static readonly string[] All =
        {
            Formed, Reinforced, Doubted, Anomaly, Corrected, Decayed, Faded, Intervened, Updated, Trust, Misremembered,
        };
    }

    /// <summary>A page of the <c>worlds</c> reply (SPEC §10.7): its worlds, and the <c>after</c> of the next page (null on the last).</summary>
    public sealed class WorldsPage
    {
        public List<WorldInfo> Worlds;
        public string Next;
    }

    /// <summary>A world as the lifecycle replies describe it (<c>worlds</c>, <c>deleted</c>; SPEC §10.7).</summary>
    public class WorldInfo
    {
        public string World;
        /// <summary>The world's clock.</summary>
        public double Day;
        /// <summary>The length of its event log (the last event seq).</summary>
        public long Events;
        /// <summary>Its last change seq.</summary>
        public long Changes;
        public long Residents;
        public long Beliefs;
        public Dictionary<string, object> Frame;

        internal static T Fill<T>(T w, Dictionary<string, object> f) where T : WorldInfo
        {
            w.World = Wire.Str(f, "world");
            w.Day = Wire.Double(f, "day") ?? 0.0;
            w.Events = Wire.Long(f, "events") ?? 0;
            w.Changes = Wire.Long(f, "changes") ?? 0;
            w.Residents = Wire.Long(f, "residents") ?? 0;
            w.Beliefs = Wire.Long(f, "beliefs") ?? 0;
            w.Frame = f;
            return w;
        }

        internal static WorldInfo From(Dictionary<string, object> f)
        {
            return Fill(new WorldInfo(), f);
        }

        public override string ToString()
        {
            return World + " (day " + Day + ", " + Events + " events, " + Beliefs + " beliefs)";
        }
    }

    /// <summary>The <c>forked</c> reply: the new world, and where it came from.</summary>
    public sealed class ForkedWorld : WorldInfo
    {
        /// <summary>The world it was copied from (the connection's).</summary>
        public string Source;
        /// <summary>The last event seq kept; null when the whole log was kept.</summary>
        public long? At;

        internal static ForkedWorld FromForked(Dictionary<string, object> f)
        {
            var w = Fill(new ForkedWorld(), f);
            w.Source = Wire.Str(f, "source");
            w.At = Wire.Long(f, "at");
            return w;
        }
    }

    /// <summary>What drifted in a <c>misremembered</c> change (its <c>detail</c>, a JSON map; SPEC §18.2).</summary>
    public sealed class MisrememberedDetail
    {
        /// <summary><c>places</c>, <c>people</c> or <c>remembered_day</c>.</summary>
        public string Field;
        /// <summary>A <c>List&lt;string&gt;</c> (places, people) or a <c>double</c> (the remembered day).</summary>
        public object Before;
        public object After;

        /// <summary>The detail decoded; null when it is not such a map.</summary>
        public static MisrememberedDetail Parse(string json)
        {
            if (json == null) return null;
            try
            {
                int at = 0;
                var map = MiniJsonReader.Value(json, ref at) as Dictionary<string, object>;
                MiniJsonReader.Space(json, ref at);
                if (map == null || at != json.Length) return null;
                var field = Wire.Str(map, "field");
                if (field != "places" && field != "people" && field != "remembered_day") return null;
                object before = Detail(Wire.Get(map, "before")), after = Detail(Wire.Get(map, "after"));
                if (before == null || after == null) return null;
                return new MisrememberedDetail { Field = field, Before = before, After = after };
            }
            catch (FormatException)
            {
                return null;
            }
        }

        static object Detail(object v)
        {
            if (v is double) return v;
            var list = v as List<object>;
            if (list == null) return null;
            var names = new List<string>();
            foreach (var x in list)
            {
                if (!(x is string)) return null;
                names.Add((string)x);
            }
            return names;
        }

        public override string ToString()
        {
            Func<object, string> show = v => v is List<string> ? "[" + string.Join(", ", (List<string>)v) + "]" : Convert.ToString(v, System.Globalization.CultureInfo.InvariantCulture);
            return Field + ": " + show(Before) + " → " + show(After);
        }
    }

    /// <summary>Just enough JSON to read a change's <c>detail</c>: maps, lists, strings, numbers (as double), booleans, null.</summary>
    static class MiniJsonReader
    {
        internal static void Space(string s, ref int at)
        {
            while (at < s.Length && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) at++;
        }

        internal static object Value(string s, ref int at)
        {
            Space(s, ref at);
            if (at >= s.Length) throw new FormatException("end of text");
            char c = s[at];
            if (c == '{')
            {
                var map = new Dictionary<string, object>(StringComparer.Ordinal);
                at++;
                Space(s, ref at);
                if (at < s.Length && s[at] == '}') { at++; return map; }
                while (true)
                {
                    Space(s, ref at);
                    var key = Value(s, ref at) as string;
                    if (key == null) throw new FormatException("a map key must be a string");
                    Space(s, ref at);
                    Expect(s, ref at, ':');
                    map[key] = Value(s, ref at);
                    Space(s, ref at);
                    if (at < s.Length && s[at] == ',') { at++; continue; }
                    Expect(s, ref at, '}');
                    return map;
                }
            }
            if (c == '[')
            {
                var list = new List<object>();
                at++;
                Space(s, ref at);
                if (at < s.Length && s[at] == ']') { at++; return list; }
                while (true)
                {
                    list.Add(Value(s, ref at));
                    Space(s, ref at);
                    if (at < s.Length && s[at] == ',') { at++; continue; }
                    Expect(s, ref at, ']');
                    return list;
                }
            }
            if (c == '"') return Text(s, ref at);
            if (Word(s, ref at, "true")) return true;
            if (Word(s, ref at, "false")) return false;
            if (Word(s, ref at, "null")) return null;
            int start = at;
            while (at < s.Length && "+-0123456789.eE".IndexOf(s[at]) >= 0) at++;
            double d;
            if (at == start || !double.TryParse(s.Substring(start, at - start), System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out d))
                throw new FormatException("not a JSON value at " + start);
            return d;
        }

        static void Expect(string s, ref int at, char c)
        {
            if (at >= s.Length || s[at] != c) throw new FormatException("expected " + c + " at " + at);
            at++;
        }

        static bool Word(string s, ref int at, string word)
        {
            if (string.CompareOrdinal(s, at, word, 0, word.Length) != 0) return false;
            at += word.Length;
            return true;
        }

        static string Text(string s, ref int at)
        {
            var sb = new System.Text.StringBuilder();
            at++;
            while (true)
            {
                if (at >= s.Length) throw new FormatException("unterminated string");
                char c = s[at++];
                if (c == '"') return sb.ToString();
                if (c != '\\') { sb.Append(c); continue; }
                if (at >= s.Length) throw new FormatException("unterminated escape");
                char e = s[at++];
                switch (e)
                {
                    case '"': case '\\': case '/': sb.Append(e); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        if (at + 4 > s.Length) throw new FormatException("short \\u escape");
                        sb.Append((char)Convert.ToInt32(s.Substring(at, 4), 16));
                        at += 4;
                        break;
                    default: throw new FormatException("bad escape \\" + e);
                }
            }
        }
    }

    /// <summary>The <c>resumed</c> frame: the backlog of a resume has been sent.</summary>
    public sealed class Resumed
    {
        public long Seq;
        public long Sent;
    }

    /// <summary>The connection dropped; the client reconnects unless <see cref="Final"/>.</summary>
    public sealed class Disconnected
    {
        public int? CloseCode;
        public string Reason;
        /// <summary>No reconnect follows (a fatal close, or <c>CloseAsync</c>).</summary>
        public bool Final;
    }

    /// <summary>A query reply with its parts joined (SPEC §11), or a <c>subscribed</c>/<c>unsubscribed</c> reply.</summary>
    public sealed class Reply
    {
        public string Type;
        /// <summary>The head fields of the first part, with every paged list concatenated over all parts.</summary>
        public Dictionary<string, object> Frame;
        /// <summary>How many frames the reply came in.</summary>
        public int Parts;

        /// <summary>A paged query's cursor: the <c>after</c> or <c>from</c> of the next page, null on the last (or for a reply that does not page).</summary>
        public string Next
        {
            get
            {
                var next = Wire.Get(Frame, "next");
                return next == null ? null : Convert.ToString(next, System.Globalization.CultureInfo.InvariantCulture);
            }
        }

        /// <summary>The entries of a list field (<c>beliefs</c>, <c>nodes</c>, …) as maps.</summary>
        public List<Dictionary<string, object>> Items(string field)
        {
            var result = new List<Dictionary<string, object>>();
            var list = Wire.Get(Frame, field) as List<object>;
            if (list != null)
                foreach (var item in list)
                    result.Add(item as Dictionary<string, object>);
            return result;
        }
    }

    /// <summary>Field access on decoded frames: absent and nil both read as null.</summary>
    public static class Wire
    {
        public static object Get(IDictionary<string, object> f, string key)
        {
            object v;
            return f != null && f.TryGetValue(key, out v) ? v : null;
        }

        public static string Str(IDictionary<string, object> f, string key)
        {
            return Get(f, key) as string;
        }

        /// <summary>A text that may be given per language (SPEC §7.1): the string, or a map's
        /// English text, else its first; null when absent.</summary>
        public static string Text(IDictionary<string, object> f, string key)
        {
            var v = Get(f, key);
            if (v is string) return (string)v;
            var map = v as IDictionary<string, object>;
            if (map == null) return null;
            object en;
            if (map.TryGetValue("en", out en) && en is string) return (string)en;
            foreach (var one in map.Values) if (one is string) return (string)one;
            return null;
        }

        public static long? Long(IDictionary<string, object> f, string key)
        {
            var v = Get(f, key);
            if (v is long) return (long)v;
            return null;
        }

        /// <summary>A number documented as "number": an integer or a float on the wire.</summary>
        public static double? Double(IDictionary<string, object> f, string key)
        {
            var v = Get(f, key);
            if (v is double) return (double)v;
            if (v is long) return (long)v;
            return null;
        }

        public static bool Bool(IDictionary<string, object> f, string key)
        {
            var v = Get(f, key);
            return v is bool && (bool)v;
        }
    }

    /// <summary>Builders for event frames (SPEC §7). Add optional fields to the returned map as needed.</summary>
    public static class Events
    {
        public static Dictionary<string, object> Claim(string root, object value)
        {
            var claim = new Dictionary<string, object> { { "root", root } };
            if (value != null) claim["value"] = value;
            return claim;
        }

        static Dictionary<string, object> Event(string eventId, double day, string kind)
        {
            return new Dictionary<string, object>
            {
                { "type", "event" }, { "event_id", eventId }, { "day", day }, { "kind", kind },
            };
        }

        /// <summary>Residents saw something: firsthand evidence for each witness.</summary>
        public static Dictionary<string, object> Observe(string eventId, double day, IList<string> witnesses, string root, object value, string subject)
        {
            var e = Event(eventId, day, "observe");
            e["witnesses"] = new List<object>(witnesses);
            e["claim"] = Claim(root, value);
            e["subject"] = subject;
            return e;
        }

        /// <summary>One resident told others: hearsay for each listener.</summary>
        public static Dictionary<string, object> Say(string eventId, double day, string speaker, IList<string> listeners, string root, object value, string subject, string topic = null)
        {
            var e = Event(eventId, day, "say");
            e["speaker"] = speaker;
            e["listeners"] = new List<object>(listeners);
            e["claim"] = Claim(root, value);
            e["subject"] = subject;
            if (topic != null) e["topic"] = topic;
            return e;
        }

        /// <summary>One resident told many; <paramref name="audience"/> null means everyone (<c>"*"</c>).</summary>
        public static Dictionary<string, object> Announce(string eventId, double day, string speaker, IList<string> audience, string root, object value, string subject)
        {
            var e = Event(eventId, day, "announce");
            e["speaker"] = speaker;
            e["audience"] = audience == null ? (object)"*" : new List<object>(audience);
            e["claim"] = Claim(root, value);
            e["subject"] = subject;
            return e;
        }

        /// <summary>A resident's action ended; the sidecar derives the claim from the status.</summary>
        /// <remarks><paramref name="reason"/>: why a rejected or interrupted act failed, a string or
        /// a map of language to text ({"en": …, "zh-Hant": …}).</remarks>
        public static Dictionary<string, object> Act(string eventId, double day, string actor, string action, string status, IList<string> witnesses = null, object reason = null)
        {
            var e = Event(eventId, day, "act");
            e["actor"] = actor;
            e["action"] = action;
            e["status"] = status;
            if (witnesses != null) e["witnesses"] = new List<object>(witnesses);
            if (reason != null) e["reason"] = reason;
            return e;
        }

        /// <summary>The player tampered with a memory: op is implant, distort, suppress or soften.</summary>
        public static Dictionary<string, object> Intervene(string eventId, double day, string resident, string op, string root, object value = null, string subject = null)
        {
            var e = Event(eventId, day, "intervene");
            e["resident"] = resident;
            e["op"] = op;
            e["claim"] = Claim(root, value);
            if (subject != null) e["subject"] = subject;
            return e;
        }

        /// <summary>Time passed: due hearsay ages.</summary>
        public static Dictionary<string, object> Tick(string eventId, double day)
        {
            return Event(eventId, day, "tick");
        }

        /// <summary>The game sets Trust(resident ← source, topic) to a value in [0, 1].</summary>
        public static Dictionary<string, object> Trust(string eventId, double day, string resident, string source, double value, string topic = null)
        {
            var e = Event(eventId, day, "trust");
            e["resident"] = resident;
            e["source"] = source;
            e["value"] = value;
            if (topic != null) e["topic"] = topic;
            return e;
        }

        /// <summary>
        /// A promise (SPEC §7.13): each party's view of it (pending, kept, overdue, broken) then
        /// moves on its own evidence. <paramref name="subject"/> is a verb phrase ("mend the fence");
        /// <paramref name="by"/> the deadline, a game day (null: never overdue).
        /// </summary>
        public static Dictionary<string, object> Promise(string eventId, double day, string promise, string promiser, IList<string> to, string action, string subject, double? by = null)
        {
            var e = Event(eventId, day, "promise");
            e["promise"] = promise;
            e["promiser"] = promiser;
            e["to"] = Ids(to);
            e["action"] = action;
            e["subject"] = subject;
            if (by.HasValue) e["by"] = by.Value;
            return e;
        }

        /// <summary>A goal event (SPEC §7.14): op is set, changed, achieved or abandoned; subject is required for set and changed.</summary>
        public static Dictionary<string, object> Goal(string eventId, double day, string resident, string goal, string op, string subject = null)
        {
            var e = Event(eventId, day, "goal");
            e["resident"] = resident;
            e["goal"] = goal;
            e["op"] = op;
            if (subject != null) e["subject"] = subject;
            return e;
        }

        /// <summary>Display names (or action labels) per language: <c>en</c> and/or <c>zh-Hant</c>.</summary>
        public static Dictionary<string, string> Names(string en, string zhHant = null)
        {
            var names = new Dictionary<string, string>();
            if (en != null) names["en"] = en;
            if (zhHant != null) names["zh-Hant"] = zhHant;
            return names;
        }

        /// <summary>
        /// The game names residents and labels its actions (SPEC §7.12): maps from a resident id
        /// (an action id) to its names by language (see <see cref="Names"/>). Give either or both.
        /// </summary>
        public static Dictionary<string, object> Register(string eventId, double day, IDictionary<string, Dictionary<string, string>> residents, IDictionary<string, Dictionary<string, string>> actions = null)
        {
            var e = Event(eventId, day, "register");
            if (residents != null) e["residents"] = Named(residents, "resident");
            if (actions != null) e["actions"] = Named(actions, "action");
            return e;
        }

        static List<object> Named(IDictionary<string, Dictionary<string, string>> byId, string key)
        {
            var list = new List<object>();
            foreach (var kv in byId)
            {
                var names = new Dictionary<string, object>();
                foreach (var n in kv.Value) names[n.Key] = n.Value;
                list.Add(new Dictionary<string, object> { { key, kv.Key }, { "names", names } });
            }
            return list;
        }

        /// <summary>One declared root prefix of a schema: allowed values, display text per language, mutability, default importance (0–1).</summary>
        public static Dictionary<string, object> SchemaRoot(string prefix, IList<object> values = null, IDictionary<string, string> text = null, bool? mutable = null, double? importance = null)
        {
            var root = new Dictionary<string, object> { { "prefix", prefix } };
            if (values != null) root["values"] = new List<object>(values);
            if (text != null)
            {
                var t = new Dictionary<string, object>();
                foreach (var kv in text) t[kv.Key] = kv.Value;
                root["text"] = t;
            }
            if (mutable.HasValue) root["mutable"] = mutable.Value;
            if (importance.HasValue) root["importance"] = importance.Value;
            return root;
        }

        /// <summary>
        /// The world declares its claim roots (SPEC §7.11), replacing any earlier schema.
        /// <paramref name="undeclared"/>: <c>accept</c> (default), <c>warn</c> (the ack's Warnings) or <c>refuse</c>.
        /// </summary>
        public static Dictionary<string, object> Schema(string eventId, double day, string undeclared, params Dictionary<string, object>[] roots)
        {
            var e = Event(eventId, day, "schema");
            if (undeclared != null) e["undeclared"] = undeclared;
            e["roots"] = new List<object>(roots ?? new Dictionary<string, object>[0]);
            return e;
        }

        internal static List<object> Ids(IEnumerable<string> ids)
        {
            var list = new List<object>();
            foreach (var id in ids) list.Add(id);
            return list;
        }
    }
}
