// Session: one connection to a relay, over libtickrelay's tr_session.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;

namespace Tickrelay
{
    /// <summary>One connection to a relay: a player or a spectator.</summary>
    public sealed partial class Session : IDisposable
    {
        IntPtr handle;
        GCHandle self;
        readonly ISim sim;
        // What the sim's callbacks handed the library, which it reads until the sim's next
        // call (tickrelay.h): freed then, and at Dispose.
        GCHandle snapshot, dump;
        IntPtr errorText;
        readonly List<IntPtr> names = new List<IntPtr>();
        // An exception thrown by the game's code inside a callback: it cannot cross the
        // native frames, so Poll throws it once the library has returned.
        Exception pending;
        static readonly Command[] NoCommands = new Command[0];

        /// <summary>The relay welcomed this connection (on every reconnect too).</summary>
        public event Action<WelcomeInfo> OnWelcome;
        /// <summary>After the sim stepped a sealed tick: draw, and send commands.</summary>
        public event Action<ulong, Command[]> OnTick;
        /// <summary>Where a command went (placed, refused, or lost in a drop).</summary>
        public event Action<Ack> OnAck;
        /// <summary>The players disagreed on the state after this tick.</summary>
        public event Action<ulong> OnDesync;
        /// <summary>An Error record from the relay: its ErrorCode and reason.</summary>
        public event Action<int, string> OnRelayError;
        /// <summary>The relay sent the right state after a desync: whether the sim took it, from which tick on, else why not.</summary>
        public event Action<bool, ulong, string> OnHealed;
        /// <summary>The session reconnected (attempt from 1) and resumes the stream.</summary>
        public event Action<uint> OnReconnected;
        /// <summary>The match ended: End.Reason, the last tick, the relay's detail.</summary>
        public event Action<int, ulong, string> OnEnd;

        public Session(string url, string token, ISim sim, string client = "tickrelay C#", string tlsCaFile = null)
            : this(url, token, sim, new SessionOptions { Client = client, TlsCaFile = tlsCaFile }) { }

        public Session(string url, string token, ISim sim, SessionOptions options)
        {
            this.sim = sim ?? throw new ArgumentNullException(nameof(sim));
            options = options ?? new SessionOptions();
            self = GCHandle.Alloc(this);
            var strings = new[] { Utf8(url), Utf8(token), Utf8(options.Client ?? "tickrelay C#"), options.TlsCaFile == null ? IntPtr.Zero : Utf8(options.TlsCaFile) };
            try
            {
                var o = Native.MakeOptions(GCHandle.ToIntPtr(self), sim);
                o.url = strings[0];
                o.token = strings[1];
                o.client = strings[2];
                o.tls_ca_file = strings[3];
                o.no_reconnect = options.NoReconnect ? 1 : 0;
                o.ping_interval_ms = options.PingIntervalMs;
                o.reconnect_min_ms = options.ReconnectMinMs;
                o.reconnect_max_ms = options.ReconnectMaxMs;
                o.reconnect_for_ms = options.ReconnectForMs;
                o.connect_timeout_ms = options.ConnectTimeoutMs;
                o.predict_window = options.PredictWindow;
                int rc = Native.tr_session_new(ref o, out handle);
                if (rc != 0)
                {
                    self.Free();
                    throw new TickrelayException((Status)rc, "tickrelay: cannot make a session (" + Marshal.PtrToStringAnsi(Native.tr_status_name(rc)) +
                        "): check the URL (ws:// or wss://) and the token");
                }
            }
            finally
            {
                foreach (var p in strings) if (p != IntPtr.Zero) Marshal.FreeHGlobal(p); // the library copied them
            }
        }

        /// <summary>Does the session's I/O for at most timeoutMs, running the callbacks.</summary>
        public Status Poll(int timeoutMs)
        {
            var rc = (Status)Native.tr_session_poll(Handle, timeoutMs);
            var e = pending;
            pending = null;
            if (e != null) throw new TickrelayException(Status.Sim, "tickrelay: the game's code threw inside a callback: " + e.Message, e);
            return rc;
        }

        /// <summary>Sends a command targeting the last applied tick + 1 + the input delay.</summary>
        public Status Send(byte[] payload, out uint seq) => (Status)Native.tr_session_send(Handle, payload, (UIntPtr)payload.Length, out seq);
        /// <summary>Sends a command targeting tick target.</summary>
        public Status SendAt(ulong target, byte[] payload, out uint seq) => (Status)Native.tr_session_send_at(Handle, target, payload, (UIntPtr)payload.Length, out seq);

        public Status Leave() => (Status)Native.tr_session_leave(Handle);
        /// <summary>What went wrong, for the game to show.</summary>
        public string Error => FromUtf8(Native.tr_session_error(Handle));
        public uint Player => Native.tr_session_player(Handle);
        public bool Live => Native.tr_session_live(Handle) != 0;
        public bool LastTick(out ulong tick) { tick = Native.tr_session_last_tick(Handle, out int ok); return ok != 0; }
        /// <summary>With prediction: whether the sim holds predicted ticks now; next is the tick it steps next,
        /// confirmed the first tick not sealed yet (the sim's ticks before it are sealed, the rest predicted).</summary>
        public bool Head(out ulong next, out ulong confirmed) => Native.tr_session_head(Handle, out next, out confirmed) != 0;
        /// <summary>How many times the session reconnected.</summary>
        public uint Reconnects => Native.tr_session_reconnects(Handle);
        /// <summary>The last Error record the relay sent: its code (0 if none) and reason.</summary>
        public int RelayError(out string reason)
        {
            int code = Native.tr_session_relay_error(Handle, out IntPtr r);
            reason = FromUtf8(r);
            return code;
        }

        IntPtr Handle => handle != IntPtr.Zero ? handle : throw new ObjectDisposedException(nameof(Session));

        public void Dispose()
        {
            if (handle == IntPtr.Zero) return;
            Native.tr_session_free(handle);
            handle = IntPtr.Zero;
            ReleaseSimMemory();
            self.Free();
        }

        internal static bool NativeCloseCodeReconnects(int code) => Native.tr_close_code_reconnects(code) != 0;
        internal static bool NativeErrorCodeJoinsAgain(int code) => Native.tr_error_code_joins_again(code) != 0;

        // Frees what every sim callback handed the library.
        void ReleaseSimMemory()
        {
            if (snapshot.IsAllocated) snapshot.Free();
            if (dump.IsAllocated) dump.Free();
            SetErrorText(null);
            SetNames(null);
        }

        // Pins b in slot (freeing what the slot held: the library reads it until the same
        // callback's next call) and returns its address.
        static IntPtr Pin(ref GCHandle slot, byte[] b)
        {
            if (slot.IsAllocated) slot.Free();
            slot = GCHandle.Alloc(b, GCHandleType.Pinned);
            return slot.AddrOfPinnedObject();
        }

        IntPtr SetErrorText(string text)
        {
            if (errorText != IntPtr.Zero) Marshal.FreeHGlobal(errorText);
            errorText = text == null ? IntPtr.Zero : Utf8(text);
            return errorText;
        }

        // Keeps the sub-hashes' names as C strings until the next sub_hashes call.
        IntPtr[] SetNames(NamedHash[] hashes)
        {
            foreach (var p in names) Marshal.FreeHGlobal(p);
            names.Clear();
            if (hashes == null) return null;
            foreach (var h in hashes) names.Add(Utf8(h.Name ?? ""));
            return names.ToArray();
        }

        static Session From(IntPtr user) => (Session)GCHandle.FromIntPtr(user).Target;

        static IntPtr Utf8(string s)
        {
            byte[] b = Encoding.UTF8.GetBytes(s + "\0");
            IntPtr p = Marshal.AllocHGlobal(b.Length);
            Marshal.Copy(b, 0, p, b.Length);
            return p;
        }

        internal static string FromUtf8(IntPtr p)
        {
            if (p == IntPtr.Zero) return "";
            int n = 0;
            while (Marshal.ReadByte(p, n) != 0) n++;
            byte[] b = new byte[n];
            Marshal.Copy(p, b, 0, n);
            return Encoding.UTF8.GetString(b);
        }

        static Command[] Commands(IntPtr cmds, UIntPtr count)
        {
            int n = (int)count;
            if (n == 0) return NoCommands;
            var outv = new Command[n];
            int size = Marshal.SizeOf<Native.TrCommand>();
            for (int i = 0; i < n; i++)
            {
                var c = Marshal.PtrToStructure<Native.TrCommand>(cmds + i * size);
                var payload = new byte[(int)c.payload_len];
                if (payload.Length > 0) Marshal.Copy(c.payload, payload, 0, payload.Length);
                outv[i] = new Command { Player = c.player, Seq = c.seq, Payload = payload };
            }
            return outv;
        }
    }
}
