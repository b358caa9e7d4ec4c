// Credence C# client: typed parameters of the queries that take more than ids
// (protocol/SPEC.md §10.1 beliefs filters, §10.4 narrative focus).

using System.Collections.Generic;

namespace Credence
{
    /// <summary>
    /// What is present now in the scene (SPEC §10.4): the narrative ranks the lines bearing on
    /// it first. Each list holds at most 100 strings; null or empty lists are left out.
    /// </summary>
    public sealed class NarrativeFocus
    {
        /// <summary>Resident ids present or talked about.</summary>
        public IList<string> People;
        /// <summary>Place ids.</summary>
        public IList<string> Places;
        /// <summary>Root prefixes (<c>"water:"</c>).</summary>
        public IList<string> Roots;
        /// <summary>Free words (<c>"festival"</c>).</summary>
        public IList<string> Topics;

        internal Dictionary<string, object> ToFrame()
        {
            var focus = new Dictionary<string, object>();
            if (People != null && People.Count > 0) focus["people"] = Events.Ids(People);
            if (Places != null && Places.Count > 0) focus["places"] = Events.Ids(Places);
            if (Roots != null && Roots.Count > 0) focus["roots"] = Events.Ids(Roots);
            if (Topics != null && Topics.Count > 0) focus["topics"] = Events.Ids(Topics);
            return focus;
        }
    }

    /// <summary>
    /// Filters of a <c>beliefs</c> query (SPEC §10.1): every one given must hold (each list
    /// with OR inside); lists hold at most 100 entries. Null fields are left out.
    /// </summary>
    public sealed class BeliefsFilter
    {
        /// <summary>Only roots sorting after this one (by code point, exclusive): continue a listing.</summary>
        public string After;
        /// <summary>One root exactly.</summary>
        public string Root;
        /// <summary>Roots starting with any of these prefixes.</summary>
        public IList<string> Prefix;
        /// <summary>Beliefs in any of these states (<c>influencing</c>, <c>past</c>, <c>doubtful</c>, <c>anomalous</c>, <c>corrected</c>).</summary>
        public IList<string> States;
        /// <summary>Beliefs naming any of these residents (in <c>people</c>, or an <c>action:</c>/<c>relation:</c> root).</summary>
        public IList<string> People;
        /// <summary>Beliefs naming any of these places.</summary>
        public IList<string> Places;
        /// <summary>Beliefs held with at least this confidence (0–100).</summary>
        public int? MinConfidence;
        /// <summary>At most this many beliefs (1–10,000), the first in root order: with <see cref="After"/> set to the last root of the previous page, a resident's memory is read a page at a time.</summary>
        public int? Limit;

        internal void WriteTo(Dictionary<string, object> frame)
        {
            if (After != null) frame["after"] = After;
            if (Root != null) frame["root"] = Root;
            if (Prefix != null) frame["prefix"] = Events.Ids(Prefix);
            if (States != null) frame["states"] = Events.Ids(States);
            if (People != null) frame["people"] = Events.Ids(People);
            if (Places != null) frame["places"] = Events.Ids(Places);
            if (MinConfidence.HasValue) frame["min_confidence"] = MinConfidence.Value;
            if (Limit.HasValue) frame["limit"] = Limit.Value;
        }
    }
}
