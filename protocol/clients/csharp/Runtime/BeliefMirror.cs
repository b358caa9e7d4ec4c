// Credence C# client: a local copy of the subscribed beliefs, kept by the notifications.

using System;
using System.Collections.Generic;

namespace Credence
{
    /// <summary>One resident's current belief on one root, as the notifications left it.</summary>
    public sealed class MirroredBelief
    {
        public string Resident;
        public string Root;
        public object Value;
        public string Subject;
        public int Confidence;
        public string State;
        public string SourceKind;
        public string Source;
        /// <summary>The seq of the change that set it; 0 when it was loaded from a <c>beliefs</c> reply.</summary>
        public long Seq;
        public double Day;
    }

    /// <summary>
    /// The beliefs of the subscribed residents, one per (resident, root), updated by every
    /// <c>belief</c> notification when <see cref="CredenceClient.DispatchPending"/> hands it to the
    /// game (so it changes only on the thread that dispatches, in seq order). Seed it with
    /// <see cref="CredenceClient.LoadMirrorAsync"/> or by connecting with <c>ResumeFrom = 0</c>.
    /// Trust changes (root <c>trust:…</c>) are kept too, under their own roots.
    /// </summary>
    public sealed class BeliefMirror
    {
        readonly Dictionary<string, Dictionary<string, MirroredBelief>> byResident =
            new Dictionary<string, Dictionary<string, MirroredBelief>>(StringComparer.Ordinal);

        /// <summary>Raised after each change the mirror applied.</summary>
        public event Action<MirroredBelief> Changed;

        public int Count
        {
            get
            {
                int n = 0;
                foreach (var r in byResident.Values) n += r.Count;
                return n;
            }
        }

        public bool TryGet(string resident, string root, out MirroredBelief belief)
        {
            belief = null;
            Dictionary<string, MirroredBelief> roots;
            return byResident.TryGetValue(resident, out roots) && roots.TryGetValue(root, out belief);
        }

        /// <summary>Every mirrored belief of one resident, in root order (code point order, as the sidecar sorts).</summary>
        public List<MirroredBelief> Of(string resident)
        {
            var list = new List<MirroredBelief>();
            Dictionary<string, MirroredBelief> roots;
            if (byResident.TryGetValue(resident, out roots)) list.AddRange(roots.Values);
            list.Sort((a, b) => CompareCodePoints(a.Root, b.Root));
            return list;
        }

        public IEnumerable<string> Residents
        {
            get { return byResident.Keys; }
        }

        /// <summary>Apply a notification; an older one than what the mirror holds is ignored.</summary>
        public void Apply(BeliefChange change)
        {
            var roots = Roots(change.Resident);
            MirroredBelief held;
            if (roots.TryGetValue(change.Root, out held) && held.Seq > change.Seq) return;
            var b = new MirroredBelief
            {
                Resident = change.Resident,
                Root = change.Root,
                Value = change.Value,
                Subject = change.Subject,
                Confidence = change.Confidence,
                State = change.State,
                SourceKind = change.SourceKind,
                Source = change.Source,
                Seq = change.Seq,
                Day = change.Day,
            };
            roots[change.Root] = b;
            var handler = Changed;
            if (handler != null) handler(b);
        }

        /// <summary>Fill the mirror from a joined <c>beliefs</c> reply; entries already set by a notification win.</summary>
        public void Load(Reply beliefs)
        {
            foreach (var s in beliefs.Items("beliefs"))
            {
                var roots = Roots(Wire.Str(s, "resident"));
                string root = Wire.Str(s, "root");
                if (roots.ContainsKey(root)) continue;
                roots[root] = new MirroredBelief
                {
                    Resident = Wire.Str(s, "resident"),
                    Root = root,
                    Value = Wire.Get(s, "value"),
                    Subject = Wire.Str(s, "subject"),
                    Confidence = (int)(Wire.Long(s, "confidence") ?? 0),
                    State = Wire.Str(s, "state"),
                    SourceKind = Wire.Str(s, "source_kind"),
                    Source = Wire.Str(s, "source"),
                    Seq = 0,
                    Day = Wire.Double(s, "updated_day") ?? 0.0,
                };
            }
        }

        public void Clear()
        {
            byResident.Clear();
        }

        Dictionary<string, MirroredBelief> Roots(string resident)
        {
            Dictionary<string, MirroredBelief> roots;
            if (!byResident.TryGetValue(resident, out roots))
            {
                roots = new Dictionary<string, MirroredBelief>(StringComparer.Ordinal);
                byResident[resident] = roots;
            }
            return roots;
        }

        /// <summary>Compare by Unicode code point (UTF-16 ordinal order differs above U+FFFF).</summary>
        public static int CompareCodePoints(string a, string b)
        {
            int i = 0, j = 0;
            while (i < a.Length && j < b.Length)
            {
                int ca = CodePoint(a, i), cb = CodePoint(b, j);
                if (ca != cb) return ca < cb ? -1 : 1;
                i += ca > 0xffff ? 2 : 1;
                j += cb > 0xffff ? 2 : 1;
            }
            return (a.Length - i).CompareTo(b.Length - j);
        }

        static int CodePoint(string s, int i)
        {
            if (char.IsHighSurrogate(s[i]) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1]))
                return char.ConvertToUtf32(s[i], s[i + 1]);
            return s[i];
        }
    }
}
