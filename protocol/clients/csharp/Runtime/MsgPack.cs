// Credence C# client: the msgpack codec of protocol v1 (protocol/SPEC.md §3).
//
// Values are plain CLR objects, the same ones a game builds frames from:
//
//   msgpack            decoded as                      encoded from
//   nil                null                            null
//   true / false       bool                            bool
//   integer            long (within ±(2^53−1))         sbyte, byte, short, ushort, int, uint, long, ulong
//   float 32 / 64      double (finite)                 float, double (always written as float 64)
//   str                string (valid UTF-8)            string
//   array              List<object>                    any IList (arrays too), except byte[]
//   map                Dictionary<string, object>      any IDictionary with string keys
//
// Decoding is strict, exactly as the sidecar decodes: one map per message and nothing after
// it, string keys at every level, no bin, no ext types (the timestamp type included), no
// integer beyond ±(2^53−1), no NaN or infinity, valid UTF-8 only, at most 16 levels of
// nesting below the frame map. Any encoding width decodes. A refusal throws
// CredenceProtocolException with code "bad_frame". Encoding writes the shortest integer and
// string forms, float 64 for every float, map entries in enumeration order, and refuses what
// the sidecar would refuse (it throws ArgumentException: that is our own misuse).
//
// C# 7.2/7.3, no dependency beyond the base class library.

using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using System.Text;

namespace Credence
{
    /// <summary>The peer sent something the protocol refuses; <see cref="Code"/> is a SPEC error code.</summary>
    public class CredenceProtocolException : Exception
    {
        public string Code { get; private set; }

        public CredenceProtocolException(string code, string message) : base(message)
        {
            Code = code;
        }
    }

    /// <summary>The msgpack codec of the Credence protocol (SPEC §3).</summary>
    public static class MsgPack
    {
        /// <summary>The largest integer magnitude on the wire: 2^53 − 1.</summary>
        public const long MaxSafeInteger = 9007199254740991L;

        /// <summary>How deep a value may sit below the frame map (the frame's own values are at depth 1).</summary>
        public const int MaxDepth = 16;

        static readonly UTF8Encoding StrictUtf8 = new UTF8Encoding(false, true);

        // ------------------------------------------------------------------ decoding

        /// <summary>Decode one binary message: exactly one map whose <c>type</c> is a string.</summary>
        public static Dictionary<string, object> DecodeFrame(byte[] data)
        {
            return DecodeFrame(data, 0, data == null ? 0 : data.Length);
        }

        /// <summary>Decode one binary message held in <paramref name="data"/>[offset, offset+count).</summary>
        public static Dictionary<string, object> DecodeFrame(byte[] data, int offset, int count)
        {
            var map = DecodeMap(data, offset, count);
            object type;
            if (!map.TryGetValue("type", out type) || !(type is string))
                throw Bad("a frame needs a string field 'type'");
            return map;
        }

        /// <summary>Decode one msgpack map and nothing after it, under the rules of SPEC §3.</summary>
        public static Dictionary<string, object> DecodeMap(byte[] data, int offset, int count)
        {
            if (data == null) throw new ArgumentNullException("data");
            if (offset < 0 || count < 0 || offset + count > data.Length) throw new ArgumentOutOfRangeException("count");
            var reader = new Reader(data, offset, offset + count);
            if (count == 0) throw Bad("empty message");
            byte first = data[offset];
            bool isMap = (first >= 0x80 && first <= 0x8f) || first == 0xde || first == 0xdf;
            object value = reader.Read(0);
            if (reader.Position != offset + count) throw Bad("trailing bytes after the msgpack map");
            if (!isMap) throw Bad("a frame must be a map");
            return (Dictionary<string, object>)value;
        }

        static CredenceProtocolException Bad(string message)
        {
            return new CredenceProtocolException("bad_frame", message);
        }

        sealed class Reader
        {
            readonly byte[] data;
            readonly int end;
            public int Position;

            public Reader(byte[] data, int start, int end)
            {
                this.data = data;
                Position = start;
                this.end = end;
            }

            void Need(int n)
            {
                if (n < 0 || end - Position < n) throw Bad("truncated msgpack");
            }

            byte U8()
            {
                Need(1);
                return data[Position++];
            }

            ulong BigEndian(int n)
            {
                Need(n);
                ulong v = 0;
                for (int i = 0; i < n; i++) v = (v << 8) | data[Position + i];
                Position += n;
                return v;
            }

            static long SafeSigned(long v)
            {
                if (v > MaxSafeInteger || v < -MaxSafeInteger) throw Bad("integer outside ±(2^53−1)");
                return v;
            }

            static long SafeUnsigned(ulong v)
            {
                if (v > (ulong)MaxSafeInteger) throw Bad("integer outside ±(2^53−1)");
                return (long)v;
            }

            static double Finite(double d)
            {
                if (double.IsNaN(d) || double.IsInfinity(d)) throw Bad("NaN and infinity are not allowed");
                return d;
            }

            string Str(int n)
            {
                Need(n);
                string s;
                try
                {
                    s = StrictUtf8.GetString(data, Position, n);
                }
                catch (ArgumentException)
                {
                    throw Bad("msgpack str is not valid UTF-8");
                }
                Position += n;
                return s;
            }

            int Length(int width)
            {
                ulong n = BigEndian(width);
                if (n > int.MaxValue) throw Bad("truncated msgpack");
                return (int)n;
            }

            public object Read(int depth)
            {
                if (depth > MaxDepth) throw Bad("a value nested deeper than " + MaxDepth + " levels");
                byte b = U8();
                if (b <= 0x7f) return (long)b;
                if (b >= 0xe0) return (long)(sbyte)b;
                if (b <= 0x8f) return ReadMap(b & 0x0f, depth);
                if (b <= 0x9f) return ReadArray(b & 0x0f, depth);
                if (b <= 0xbf) return Str(b & 0x1f);
                switch (b)
                {
                    case 0xc0: return null;
                    case 0xc2: return false;
                    case 0xc3: return true;
                    case 0xc4: case 0xc5: case 0xc6:
                        throw Bad("binary (bin) values are not allowed; send text as str");
                    case 0xc7: case 0xc8: case 0xc9:
                    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
                        throw Bad("msgpack ext types are not allowed");
                    case 0xca:
                    {
                        uint bits = (uint)BigEndian(4);
                        float f = BitConverter.ToSingle(BitConverter.GetBytes(bits), 0);
                        return Finite(f);
                    }
                    case 0xcb:
                        return Finite(BitConverter.Int64BitsToDouble((long)BigEndian(8)));
                    case 0xcc: return (long)BigEndian(1);
                    case 0xcd: return (long)BigEndian(2);
                    case 0xce: return (long)BigEndian(4);
                    case 0xcf: return SafeUnsigned(BigEndian(8));
                    case 0xd0: return (long)(sbyte)BigEndian(1);
                    case 0xd1: return (long)(short)BigEndian(2);
                    case 0xd2: return (long)(int)BigEndian(4);
                    case 0xd3: return SafeSigned((long)BigEndian(8));
                    case 0xd9: return Str(Length(1));
                    case 0xda: return Str(Length(2));
                    case 0xdb: return Str(Length(4));
                    case 0xdc: return ReadArray(Length(2), depth);
                    case 0xdd: return ReadArray(Length(4), depth);
                    case 0xde: return ReadMap(Length(2), depth);
                    case 0xdf: return ReadMap(Length(4), depth);
                    default: throw Bad("byte 0xc1 is never used in msgpack");
                }
            }

            List<object> ReadArray(int n, int depth)
            {
                // Every element takes at least one byte: refuse a length the message cannot hold
                // before allocating for it.
                Need(n);
                var list = new List<object>(n);
                for (int i = 0; i < n; i++) list.Add(Read(depth + 1));
                return list;
            }

            Dictionary<string, object> ReadMap(int n, int depth)
            {
                Need(n);
                var map = new Dictionary<string, object>(n, StringComparer.Ordinal);
                for (int i = 0; i < n; i++)
                {
                    byte k = U8();
                    string key;
                    if (k >= 0xa0 && k <= 0xbf) key = Str(k & 0x1f);
                    else if (k == 0xd9) key = Str(Length(1));
                    else if (k == 0xda) key = Str(Length(2));
                    else if (k == 0xdb) key = Str(Length(4));
                    else
                    {
                        // Read the key anyway so malformed bytes say so, then refuse it.
                        Position--;
                        Read(depth + 1);
                        throw Bad("map keys must be strings");
                    }
                    object value = Read(depth + 1);
                    map[key] = value; // a repeated key keeps its last value, as Python's msgpack does
                }
                return map;
            }
        }

        // ------------------------------------------------------------------ encoding

        /// <summary>Encode a frame (a map with string keys) as one msgpack message.</summary>
        public static byte[] Encode(IDictionary frame)
        {
            if (frame == null) throw new ArgumentNullException("frame");
            var stream = new MemoryStream(128);
            Write(stream, frame, 0, new List<object>());
            return stream.ToArray();
        }

        /// <summary>Encode any value of the table above (used for nested values and tests).</summary>
        public static byte[] EncodeValue(object value)
        {
            var stream = new MemoryStream(64);
            Write(stream, value, 0, new List<object>());
            return stream.ToArray();
        }

        /// <summary>Where a refused value sits, e.g. <c>frame.claim.value</c> or <c>frame.witnesses[2]</c>.</summary>
        static ArgumentException Refuse(List<object> trail, string message)
        {
            var where = new StringBuilder("frame");
            foreach (var step in trail)
            {
                if (step is int) where.Append('[').Append((int)step).Append(']');
                else where.Append('.').Append(step);
            }
            return new ArgumentException(where + ": " + message);
        }

        static void Write(MemoryStream s, object value, int depth, List<object> trail)
        {
            if (depth > MaxDepth) throw Refuse(trail, "nested deeper than " + MaxDepth + " levels");
            if (value == null) { s.WriteByte(0xc0); return; }
            if (value is bool) { s.WriteByte((bool)value ? (byte)0xc3 : (byte)0xc2); return; }
            if (value is string) { WriteString(s, (string)value, trail); return; }
            if (value is long) { WriteInteger(s, (long)value, trail); return; }
            if (value is int) { WriteInteger(s, (int)value, trail); return; }
            if (value is short) { WriteInteger(s, (short)value, trail); return; }
            if (value is sbyte) { WriteInteger(s, (sbyte)value, trail); return; }
            if (value is byte) { WriteInteger(s, (byte)value, trail); return; }
            if (value is ushort) { WriteInteger(s, (ushort)value, trail); return; }
            if (value is uint) { WriteInteger(s, (uint)value, trail); return; }
            if (value is ulong)
            {
                ulong u = (ulong)value;
                if (u > (ulong)MaxSafeInteger) throw Refuse(trail, "integer outside ±(2^53−1); send ids as strings");
                WriteInteger(s, (long)u, trail);
                return;
            }
            if (value is double || value is float)
            {
                double d = Convert.ToDouble(value);
                if (double.IsNaN(d) || double.IsInfinity(d)) throw Refuse(trail, "NaN and infinity are not allowed");
                s.WriteByte(0xcb);
                WriteBigEndian(s, (ulong)BitConverter.DoubleToInt64Bits(d), 8);
                return;
            }
            if (value is byte[]) throw Refuse(trail, "bin is not allowed; send text as a string");
            var dict = value as IDictionary;
            if (dict != null)
            {
                WriteHeader(s, dict.Count, 0x80, 0xde, 0xdf);
                foreach (DictionaryEntry entry in dict)
                {
                    var key = entry.Key as string;
                    if (key == null) throw Refuse(trail, "map keys must be strings");
                    WriteString(s, key, trail);
                    trail.Add(key);
                    Write(s, entry.Value, depth + 1, trail);
                    trail.RemoveAt(trail.Count - 1);
                }
                return;
            }
            var list = value as IList;
            if (list != null)
            {
                WriteHeader(s, list.Count, 0x90, 0xdc, 0xdd);
                for (int i = 0; i < list.Count; i++)
                {
                    trail.Add(i);
                    Write(s, list[i], depth + 1, trail);
                    trail.RemoveAt(trail.Count - 1);
                }
                return;
            }
            throw Refuse(trail, "cannot encode a " + value.GetType().Name);
        }

        static void WriteHeader(MemoryStream s, int n, byte fix, byte w16, byte w32)
        {
            if (n < 16) s.WriteByte((byte)(fix | n));
            else if (n <= 0xffff) { s.WriteByte(w16); WriteBigEndian(s, (ulong)n, 2); }
            else { s.WriteByte(w32); WriteBigEndian(s, (ulong)n, 4); }
        }

        static void WriteString(MemoryStream s, string text, List<object> trail)
        {
            byte[] bytes;
            try
            {
                bytes = StrictUtf8.GetBytes(text);
            }
            catch (ArgumentException)
            {
                throw Refuse(trail, "a string holds a lone UTF-16 surrogate: not valid UTF-8");
            }
            int n = bytes.Length;
            if (n < 32) s.WriteByte((byte)(0xa0 | n));
            else if (n <= 0xff) { s.WriteByte(0xd9); s.WriteByte((byte)n); }
            else if (n <= 0xffff) { s.WriteByte(0xda); WriteBigEndian(s, (ulong)n, 2); }
            else { s.WriteByte(0xdb); WriteBigEndian(s, (ulong)n, 4); }
            s.Write(bytes, 0, n);
        }

        static void WriteInteger(MemoryStream s, long v, List<object> trail)
        {
            if (v > MaxSafeInteger || v < -MaxSafeInteger)
                throw Refuse(trail, "integer outside ±(2^53−1); send ids as strings");
            if (v >= 0)
            {
                if (v <= 0x7f) s.WriteByte((byte)v);
                else if (v <= 0xff) { s.WriteByte(0xcc); s.WriteByte((byte)v); }
                else if (v <= 0xffff) { s.WriteByte(0xcd); WriteBigEndian(s, (ulong)v, 2); }
                else if (v <= 0xffffffffL) { s.WriteByte(0xce); WriteBigEndian(s, (ulong)v, 4); }
                else { s.WriteByte(0xcf); WriteBigEndian(s, (ulong)v, 8); }
            }
            else
            {
                if (v >= -32) s.WriteByte((byte)(sbyte)v);
                else if (v >= sbyte.MinValue) { s.WriteByte(0xd0); s.WriteByte((byte)(sbyte)v); }
                else if (v >= short.MinValue) { s.WriteByte(0xd1); WriteBigEndian(s, (ulong)(ushort)(short)v, 2); }
                else if (v >= int.MinValue) { s.WriteByte(0xd2); WriteBigEndian(s, (ulong)(uint)(int)v, 4); }
                else { s.WriteByte(0xd3); WriteBigEndian(s, (ulong)v, 8); }
            }
        }

        static void WriteBigEndian(MemoryStream s, ulong v, int n)
        {
            for (int i = n - 1; i >= 0; i--) s.WriteByte((byte)(v >> (8 * i)));
        }
    }
}
