// The tickrelay client for C# (netstandard2.1: Unity, Godot .NET, Mono): P/Invoke over
// libtickrelay's flat C API (client/c/include/tickrelay.h), the same session model. The
// game calls Session.Poll from its own loop; every callback (its sim's and the events)
// runs inside that call, on that thread. Callbacks are static methods that find their
// Session through a GCHandle, as IL2CPP requires (MonoPInvokeCallback).
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace AOT
{
    // Unity's IL2CPP recognises this attribute by name on methods called from native code.
    [AttributeUsage(AttributeTargets.Method)]
    public sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type t) { }
    }
}

namespace Tickrelay
{
    /// <summary>tr_status: 0 is OK, 1 the match ended, negative a failure.</summary>
    public enum Status
    {
        Ok = 0, Ended = 1, Invalid = -1, NoMemory = -2, Closed = -3, Relay = -4, Stream = -5, Sim = -6, State = -7, IO = -8,
    }

    /// <summary>One command of a sealed tick. Payload is a copy the game may keep.</summary>
    public struct Command
    {
        public uint Player;
        public uint Seq;
        public byte[] Payload;
    }

    /// <summary>What the game needs from the match's Start record to build its sim.</summary>
    public struct StartInfo
    {
        public string MatchId, SimName;
        public uint SimVersion, Players, TickRate, ChecksumEvery;
        public ulong Seed, MaxTicks, ConfigHash;
        public byte[] SimParams;
    }

    /// <summary>The game's deterministic simulation. Step returns false when it failed.</summary>
    public interface ISim
    {
        bool Start(StartInfo start);
        bool Step(ulong tick, Command[] commands);
        ulong Hash();
    }

    /// <summary>A sim that can give its whole state and take it back: forensics and heals.</summary>
    public interface ISnapshotter
    {
        byte[] Snapshot();
        bool Restore(byte[] state);
    }

    /// <summary>One connection to a relay: a player or a spectator.</summary>
    public sealed class Session : IDisposable
    {
        IntPtr handle;
        GCHandle self;
        readonly ISim sim;
        GCHandle pinned; // the last snapshot handed to the library, until the next
        // An exception thrown by the game's code inside a callback: it cannot cross the
        // native frames, so Poll throws it once the library has returned.
        Exception pending;
        static readonly Command[] NoCommands = new Command[0];

        /// <summary>After the sim stepped a sealed tick: draw, and send commands.</summary>
        public event Action<ulong, Command[]> OnTick;
        /// <summary>The players disagreed on the state after this tick.</summary>
        public event Action<ulong> OnDesync;
        /// <summary>The match ended: End.Reason, the last tick, the relay's detail.</summary>
        public event Action<int, ulong, string> OnEnd;

        public Session(string url, string token, ISim sim, string client = "tickrelay C#", string tlsCaFile = null)
        {
            this.sim = sim ?? throw new ArgumentNullException(nameof(sim));
            self = GCHandle.Alloc(this);
            var o = new Native.Options();
            var strings = new[] { Utf8(url), Utf8(token), Utf8(client), tlsCaFile == null ? IntPtr.Zero : Utf8(tlsCaFile) };
            try
            {
                o.url = strings[0];
                o.token = strings[1];
                o.client = strings[2];
                o.tls_ca_file = strings[3];
                IntPtr user = GCHandle.ToIntPtr(self);
                o.sim_user = user;
                o.sim_start = Marshal.GetFunctionPointerForDelegate(Native.StartFn);
                o.sim_step = Marshal.GetFunctionPointerForDelegate(Native.StepFn);
                o.sim_hash = Marshal.GetFunctionPointerForDelegate(Native.HashFn);
                if (sim is ISnapshotter)
                {
                    o.sim_snapshot = Marshal.GetFunctionPointerForDelegate(Native.SnapshotFn);
                    o.sim_restore = Marshal.GetFunctionPointerForDelegate(Native.RestoreFn);
                }
                o.ev_user = user;
                o.ev_tick = Marshal.GetFunctionPointerForDelegate(Native.TickFn);
                o.ev_desync = Marshal.GetFunctionPointerForDelegate(Native.DesyncFn);
                o.ev_end = Marshal.GetFunctionPointerForDelegate(Native.EndFn);
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

        public Status Leave() => (Status)Native.tr_session_leave(Handle);
        /// <summary>What went wrong, for the game to show.</summary>
        public string Error => FromUtf8(Native.tr_session_error(Handle));
        public uint Player => Native.tr_session_player(Handle);
        public bool Live => Native.tr_session_live(Handle) != 0;
        public bool LastTick(out ulong tick) { tick = Native.tr_session_last_tick(Handle, out int ok); return ok != 0; }

        IntPtr Handle => handle != IntPtr.Zero ? handle : throw new ObjectDisposedException(nameof(Session));

        public void Dispose()
        {
            if (handle == IntPtr.Zero) return;
            Native.tr_session_free(handle);
            handle = IntPtr.Zero;
            if (pinned.IsAllocated) pinned.Free();
            self.Free();
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

        // The native callbacks: static, as IL2CPP requires; each finds its Session.
        static class Native
        {
            const string Lib = "tickrelay";

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrCommand { public uint player, seq; public IntPtr payload; public UIntPtr payload_len; }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrStart
            {
                public IntPtr match_id, sim_name;
                public uint sim_version;
                public ulong seed;
                public IntPtr sim_params;
                public UIntPtr sim_params_len;
                public uint players, tick_rate, checksum_every;
                public ulong max_ticks, config_hash;
            }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrDesync { public ulong tick; public IntPtr groups; public UIntPtr groups_len; public IntPtr missing; public UIntPtr missing_len; }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrEnd { public int reason; public ulong last_tick; public IntPtr detail; }

            // tr_options, its tr_sim and tr_events inline, field for field.
            [StructLayout(LayoutKind.Sequential)]
            internal struct Options
            {
                public IntPtr url, token;
                public IntPtr sim_user, sim_start, sim_step, sim_hash, sim_over, sim_error, sim_snapshot, sim_restore, sim_sub_hashes, sim_dump;
                public IntPtr ev_user, ev_welcome, ev_tick, ev_ack, ev_desync, ev_relay_error, ev_healed, ev_reconnected, ev_end;
                public IntPtr tls_ca_file, client;
                public int no_reconnect;
                public uint ping_interval_ms, reconnect_min_ms, reconnect_max_ms, reconnect_for_ms, connect_timeout_ms;
            }

            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int StartCb(IntPtr user, ref TrStart start);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int StepCb(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate ulong HashCb(IntPtr user);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int SnapshotCb(IntPtr user, out IntPtr state, out UIntPtr len);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int RestoreCb(IntPtr user, IntPtr state, UIntPtr len);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void TickCb(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void DesyncCb(IntPtr user, ref TrDesync d);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void EndCb(IntPtr user, ref TrEnd e);

            // Held for the process's life: the library keeps their pointers.
            internal static readonly StartCb StartFn = OnStart;
            internal static readonly StepCb StepFn = OnStep;
            internal static readonly HashCb HashFn = OnHash;
            internal static readonly SnapshotCb SnapshotFn = OnSnapshot;
            internal static readonly RestoreCb RestoreFn = OnRestore;
            internal static readonly TickCb TickFn = OnTickNative;
            internal static readonly DesyncCb DesyncFn = OnDesyncNative;
            internal static readonly EndCb EndFn = OnEndNative;

            [AOT.MonoPInvokeCallback(typeof(StartCb))]
            static int OnStart(IntPtr user, ref TrStart st)
            {
                var p = new byte[(int)st.sim_params_len];
                if (p.Length > 0) Marshal.Copy(st.sim_params, p, 0, p.Length);
                var info = new StartInfo
                {
                    MatchId = FromUtf8(st.match_id), SimName = FromUtf8(st.sim_name), SimVersion = st.sim_version, Seed = st.seed,
                    SimParams = p, Players = st.players, TickRate = st.tick_rate, ChecksumEvery = st.checksum_every,
                    MaxTicks = st.max_ticks, ConfigHash = st.config_hash,
                };
                var s = From(user);
                try { return s.sim.Start(info) ? 0 : 1; }
                catch (Exception e) { s.pending = e; return 1; }
            }

            [AOT.MonoPInvokeCallback(typeof(StepCb))]
            static int OnStep(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count)
            {
                var s = From(user);
                try { return s.sim.Step(tick, Commands(cmds, count)) ? 0 : 1; }
                catch (Exception e) { s.pending = e; return 1; }
            }

            [AOT.MonoPInvokeCallback(typeof(HashCb))]
            static ulong OnHash(IntPtr user)
            {
                var s = From(user);
                try { return s.sim.Hash(); }
                catch (Exception e) { s.pending = e; return 0; }
            }

            [AOT.MonoPInvokeCallback(typeof(SnapshotCb))]
            static int OnSnapshot(IntPtr user, out IntPtr state, out UIntPtr len)
            {
                var s = From(user);
                byte[] b;
                try { b = ((ISnapshotter)s.sim).Snapshot(); }
                catch (Exception e) { s.pending = e; b = null; }
                if (b == null) { state = IntPtr.Zero; len = UIntPtr.Zero; return 1; }
                if (s.pinned.IsAllocated) s.pinned.Free();
                s.pinned = GCHandle.Alloc(b, GCHandleType.Pinned); // valid until the next call, as the C API says
                state = s.pinned.AddrOfPinnedObject();
                len = (UIntPtr)b.Length;
                return 0;
            }

            [AOT.MonoPInvokeCallback(typeof(RestoreCb))]
            static int OnRestore(IntPtr user, IntPtr state, UIntPtr len)
            {
                var b = new byte[(int)len];
                if (b.Length > 0) Marshal.Copy(state, b, 0, b.Length);
                var s = From(user);
                try { return ((ISnapshotter)s.sim).Restore(b) ? 0 : 1; }
                catch (Exception e) { s.pending = e; return 1; }
            }

            [AOT.MonoPInvokeCallback(typeof(TickCb))]
            static void OnTickNative(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count)
            {
                var s = From(user);
                if (s.OnTick == null) return;
                try { s.OnTick(tick, Commands(cmds, count)); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(DesyncCb))]
            static void OnDesyncNative(IntPtr user, ref TrDesync d)
            {
                var s = From(user);
                try { s.OnDesync?.Invoke(d.tick); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(EndCb))]
            static void OnEndNative(IntPtr user, ref TrEnd end)
            {
                var s = From(user);
                try { s.OnEnd?.Invoke(end.reason, end.last_tick, FromUtf8(end.detail)); }
                catch (Exception e) { s.pending = e; }
            }

            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_new(ref Options o, out IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern void tr_session_free(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_poll(IntPtr s, int timeoutMs);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_send(IntPtr s, byte[] payload, UIntPtr len, out uint seq);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_leave(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern IntPtr tr_session_error(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern uint tr_session_player(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_live(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern ulong tr_session_last_tick(IntPtr s, out int ok);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern IntPtr tr_status_name(int status);
        }
    }

    /// <summary>A session that could not be made: its status and what to check.</summary>
    public sealed class TickrelayException : Exception
    {
        public Status Status { get; }
        public TickrelayException(Status status, string message, Exception inner = null) : base(message, inner) { Status = status; }
    }
}
