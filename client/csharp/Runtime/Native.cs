// libtickrelay's C API as P/Invoke declarations, and the native callbacks: static methods
// marked MonoPInvokeCallback, as IL2CPP requires, each finding its Session through the
// GCHandle passed as user. An exception from game code is kept for Poll to throw.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Tickrelay
{
    public sealed partial class Session
    {
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
            internal struct TrNamedHash { public IntPtr name; public ulong hash; }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrWelcome
            {
                public IntPtr match_id;
                public uint player, input_delay;
                public int has_sealed_tick;
                public ulong sealed_tick;
                public uint last_seq, max_payload;
            }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrAck { public uint seq; public ulong tick; public int reject; public IntPtr detail; }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrDesync { public ulong tick; public IntPtr groups; public UIntPtr groups_len; public IntPtr missing; public UIntPtr missing_len; }

            [StructLayout(LayoutKind.Sequential)]
            internal struct TrEnd { public int reason; public ulong last_tick; public IntPtr detail; }

            // tr_options, its tr_sim and tr_events inline, field for field.
            [StructLayout(LayoutKind.Sequential)]
            internal struct Options
            {
                public IntPtr url, token;
                public IntPtr sim_user, sim_start, sim_step, sim_hash, sim_over, sim_error, sim_snapshot, sim_restore, sim_sub_hashes, sim_dump, sim_winner;
                public IntPtr ev_user, ev_welcome, ev_tick, ev_ack, ev_desync, ev_relay_error, ev_healed, ev_reconnected, ev_end;
                public IntPtr tls_ca_file, client;
                public int no_reconnect;
                public uint ping_interval_ms, reconnect_min_ms, reconnect_max_ms, reconnect_for_ms, connect_timeout_ms;
                public uint predict_window;
            }

            // The callback table for sim: the optional ones where it has the interface.
            internal static Options MakeOptions(IntPtr user, ISim sim)
            {
                var o = new Options { sim_user = user, ev_user = user };
                o.sim_start = Marshal.GetFunctionPointerForDelegate(StartFn);
                o.sim_step = Marshal.GetFunctionPointerForDelegate(StepFn);
                o.sim_hash = Marshal.GetFunctionPointerForDelegate(HashFn);
                if (sim is IEnder) o.sim_over = Marshal.GetFunctionPointerForDelegate(OverFn);
                if (sim is IWinner) o.sim_winner = Marshal.GetFunctionPointerForDelegate(WinnerFn);
                if (sim is IFailureText) o.sim_error = Marshal.GetFunctionPointerForDelegate(ErrorFn);
                if (sim is ISnapshotter)
                {
                    o.sim_snapshot = Marshal.GetFunctionPointerForDelegate(SnapshotFn);
                    o.sim_restore = Marshal.GetFunctionPointerForDelegate(RestoreFn);
                }
                if (sim is ISubHasher) o.sim_sub_hashes = Marshal.GetFunctionPointerForDelegate(SubHashesFn);
                if (sim is IDumper) o.sim_dump = Marshal.GetFunctionPointerForDelegate(DumpFn);
                o.ev_welcome = Marshal.GetFunctionPointerForDelegate(WelcomeFn);
                o.ev_tick = Marshal.GetFunctionPointerForDelegate(TickFn);
                o.ev_ack = Marshal.GetFunctionPointerForDelegate(AckFn);
                o.ev_desync = Marshal.GetFunctionPointerForDelegate(DesyncFn);
                o.ev_relay_error = Marshal.GetFunctionPointerForDelegate(RelayErrorFn);
                o.ev_healed = Marshal.GetFunctionPointerForDelegate(HealedFn);
                o.ev_reconnected = Marshal.GetFunctionPointerForDelegate(ReconnectedFn);
                o.ev_end = Marshal.GetFunctionPointerForDelegate(EndFn);
                return o;
            }

            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int StartCb(IntPtr user, ref TrStart start);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int StepCb(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate ulong HashCb(IntPtr user);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int OverCb(IntPtr user);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate uint WinnerCb(IntPtr user);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate IntPtr ErrorCb(IntPtr user);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int SnapshotCb(IntPtr user, out IntPtr state, out UIntPtr len);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int RestoreCb(IntPtr user, IntPtr state, UIntPtr len);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate UIntPtr SubHashesCb(IntPtr user, IntPtr outv, UIntPtr cap);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate int DumpCb(IntPtr user, out IntPtr text, out UIntPtr len);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void WelcomeCb(IntPtr user, ref TrWelcome w);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void TickCb(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void AckCb(IntPtr user, ref TrAck a);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void DesyncCb(IntPtr user, ref TrDesync d);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void RelayErrorCb(IntPtr user, int code, IntPtr reason);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void HealedCb(IntPtr user, int healed, ulong through, IntPtr why);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void ReconnectedCb(IntPtr user, uint attempt);
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)] internal delegate void EndCb(IntPtr user, ref TrEnd e);

            // Held for the process's life: the library keeps their pointers.
            static readonly StartCb StartFn = OnStart;
            static readonly StepCb StepFn = OnStep;
            static readonly HashCb HashFn = OnHash;
            static readonly OverCb OverFn = OnOver;
            static readonly WinnerCb WinnerFn = OnWinner;
            static readonly ErrorCb ErrorFn = OnError;
            static readonly SnapshotCb SnapshotFn = OnSnapshot;
            static readonly RestoreCb RestoreFn = OnRestore;
            static readonly SubHashesCb SubHashesFn = OnSubHashes;
            static readonly DumpCb DumpFn = OnDump;
            static readonly WelcomeCb WelcomeFn = OnWelcomeNative;
            static readonly TickCb TickFn = OnTickNative;
            static readonly AckCb AckFn = OnAckNative;
            static readonly DesyncCb DesyncFn = OnDesyncNative;
            static readonly RelayErrorCb RelayErrorFn = OnRelayErrorNative;
            static readonly HealedCb HealedFn = OnHealedNative;
            static readonly ReconnectedCb ReconnectedFn = OnReconnectedNative;
            static readonly EndCb EndFn = OnEndNative;

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

            [AOT.MonoPInvokeCallback(typeof(OverCb))]
            static int OnOver(IntPtr user)
            {
                var s = From(user);
                try { return ((IEnder)s.sim).Over() ? 1 : 0; }
                catch (Exception e) { s.pending = e; return 0; }
            }

            [AOT.MonoPInvokeCallback(typeof(WinnerCb))]
            static uint OnWinner(IntPtr user)
            {
                var s = From(user);
                try { return ((IWinner)s.sim).Winner(); }
                catch (Exception e) { s.pending = e; return 0; }
            }

            [AOT.MonoPInvokeCallback(typeof(ErrorCb))]
            static IntPtr OnError(IntPtr user)
            {
                var s = From(user);
                string text;
                try { text = ((IFailureText)s.sim).Error(); }
                catch (Exception e) { s.pending = e; text = "the sim's Error threw: " + e.Message; }
                return s.SetErrorText(text ?? "");
            }

            [AOT.MonoPInvokeCallback(typeof(SnapshotCb))]
            static int OnSnapshot(IntPtr user, out IntPtr state, out UIntPtr len)
            {
                var s = From(user);
                byte[] b;
                try { b = ((ISnapshotter)s.sim).Snapshot(); }
                catch (Exception e) { s.pending = e; b = null; }
                state = IntPtr.Zero;
                len = UIntPtr.Zero;
                if (b == null) return 1;
                state = Pin(ref s.snapshot, b); // valid until the next call, as the C API says
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

            [AOT.MonoPInvokeCallback(typeof(SubHashesCb))]
            static UIntPtr OnSubHashes(IntPtr user, IntPtr outv, UIntPtr cap)
            {
                var s = From(user);
                NamedHash[] hashes;
                try { hashes = ((ISubHasher)s.sim).SubHashes() ?? new NamedHash[0]; }
                catch (Exception e) { s.pending = e; return UIntPtr.Zero; }
                int n = Math.Min(hashes.Length, (int)Math.Min((ulong)cap, int.MaxValue));
                var keep = new NamedHash[n];
                Array.Copy(hashes, keep, n);
                IntPtr[] names = s.SetNames(keep);
                int size = Marshal.SizeOf<TrNamedHash>();
                for (int i = 0; i < n; i++)
                    Marshal.StructureToPtr(new TrNamedHash { name = names[i], hash = keep[i].Hash }, outv + i * size, false);
                return (UIntPtr)n;
            }

            [AOT.MonoPInvokeCallback(typeof(DumpCb))]
            static int OnDump(IntPtr user, out IntPtr text, out UIntPtr len)
            {
                var s = From(user);
                string d;
                text = IntPtr.Zero;
                len = UIntPtr.Zero;
                try { d = ((IDumper)s.sim).Dump(); }
                catch (Exception e) { s.pending = e; return 1; }
                if (d == null) return 1;
                byte[] b = Encoding.UTF8.GetBytes(d);
                text = Pin(ref s.dump, b.Length > 0 ? b : new byte[1]);
                len = (UIntPtr)b.Length;
                return 0;
            }

            [AOT.MonoPInvokeCallback(typeof(WelcomeCb))]
            static void OnWelcomeNative(IntPtr user, ref TrWelcome w)
            {
                var s = From(user);
                var info = new WelcomeInfo
                {
                    MatchId = FromUtf8(w.match_id), Player = w.player, InputDelay = w.input_delay, LastSeq = w.last_seq,
                    MaxPayload = w.max_payload, HasSealedTick = w.has_sealed_tick != 0, SealedTick = w.sealed_tick,
                };
                try { s.OnWelcome?.Invoke(info); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(TickCb))]
            static void OnTickNative(IntPtr user, ulong tick, IntPtr cmds, UIntPtr count)
            {
                var s = From(user);
                if (s.OnTick == null) return;
                try { s.OnTick(tick, Commands(cmds, count)); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(AckCb))]
            static void OnAckNative(IntPtr user, ref TrAck a)
            {
                var s = From(user);
                var ack = new Ack { Seq = a.seq, Tick = a.tick, Reject = a.reject, Detail = FromUtf8(a.detail) };
                try { s.OnAck?.Invoke(ack); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(DesyncCb))]
            static void OnDesyncNative(IntPtr user, ref TrDesync d)
            {
                var s = From(user);
                try { s.OnDesync?.Invoke(d.tick); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(RelayErrorCb))]
            static void OnRelayErrorNative(IntPtr user, int code, IntPtr reason)
            {
                var s = From(user);
                try { s.OnRelayError?.Invoke(code, FromUtf8(reason)); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(HealedCb))]
            static void OnHealedNative(IntPtr user, int healed, ulong through, IntPtr why)
            {
                var s = From(user);
                try { s.OnHealed?.Invoke(healed != 0, through, FromUtf8(why)); }
                catch (Exception e) { s.pending = e; }
            }

            [AOT.MonoPInvokeCallback(typeof(ReconnectedCb))]
            static void OnReconnectedNative(IntPtr user, uint attempt)
            {
                var s = From(user);
                try { s.OnReconnected?.Invoke(attempt); }
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
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_send_at(IntPtr s, ulong target, byte[] payload, UIntPtr len, out uint seq);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_leave(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern IntPtr tr_session_error(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern uint tr_session_player(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_live(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern ulong tr_session_last_tick(IntPtr s, out int ok);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern uint tr_session_reconnects(IntPtr s);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_head(IntPtr s, out ulong next, out ulong confirmed);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_session_relay_error(IntPtr s, out IntPtr reason);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern IntPtr tr_status_name(int status);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_close_code_reconnects(int code);
            [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)] internal static extern int tr_error_code_joins_again(int code);
        }
    }
}
