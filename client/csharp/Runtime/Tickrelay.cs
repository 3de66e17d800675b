// The tickrelay client for C# (netstandard2.1: Unity, Godot .NET, Mono): P/Invoke over
// libtickrelay's flat C API (client/c/include/tickrelay.h), the same session model. The
// game calls Session.Poll from its own loop; every callback (its sim's and the events)
// runs inside that call, on that thread. This file holds the types a game uses;
// Session.cs the session, Native.cs the C API's declarations and the native callbacks.
using System;

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

    /// <summary>The relay's Welcome: who this connection is in the match.</summary>
    public struct WelcomeInfo
    {
        public string MatchId;
        /// <summary>0: a spectator.</summary>
        public uint Player, InputDelay, LastSeq, MaxPayload;
        public bool HasSealedTick;
        public ulong SealedTick;
    }

    /// <summary>A CommandAck: where a command went.</summary>
    public struct Ack
    {
        /// <summary>Reject of a command lost in a drop: the relay never placed it; send it again if it matters.</summary>
        public const int Lost = -1;
        public uint Seq;
        public ulong Tick;
        /// <summary>0 when placed, else the Reject enum's value, or Lost.</summary>
        public int Reject;
        public string Detail;
    }

    /// <summary>One subsystem's digest: what the relay's forensics compare to name the subsystems that differ.</summary>
    public struct NamedHash
    {
        public string Name;
        public ulong Hash;
        public NamedHash(string name, ulong hash) { Name = name; Hash = hash; }
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

    /// <summary>A sim that can say why it failed (its refused Start, its failed Step): the text the relay and the session's Error show.</summary>
    public interface IFailureText
    {
        string Error();
    }

    /// <summary>A sim that knows when its game is over (Checksum.over).</summary>
    public interface IEnder
    {
        bool Over();
    }

    /// <summary>An IEnder that names the winner once its game is over (Checksum.winner: a player, 1..players; 0 none, a draw), for the backend's outcome.</summary>
    public interface IWinner : IEnder
    {
        uint Winner();
    }

    /// <summary>A sim with sub-hashes, in its own order: the forensics' state step names the subsystems that differ.</summary>
    public interface ISubHasher
    {
        NamedHash[] SubHashes();
    }

    /// <summary>A sim that writes its state as text, one fact a line, each ended by '\n': the forensics' state and lines steps.</summary>
    public interface IDumper
    {
        string Dump();
    }

    /// <summary>How a session connects; every zero is the library's default (tickrelay.h, tr_options).</summary>
    public sealed class SessionOptions
    {
        /// <summary>Client name and version for the relay's logs; null: "tickrelay C#".</summary>
        public string Client;
        /// <summary>For wss://: a PEM file of the authorities to trust instead of the system's.</summary>
        public string TlsCaFile;
        /// <summary>Never reconnect after a drop (the default reconnects when the close code allows).</summary>
        public bool NoReconnect;
        /// <summary>Milliseconds; 0: the library's default.</summary>
        public uint PingIntervalMs, ReconnectMinMs, ReconnectMaxMs, ReconnectForMs, ConnectTimeoutMs;
        /// <summary>Prediction: 0, off; else the most ticks the sim runs ahead of the sealed stream (8 is the
        /// Go client's default; at most 64). Needs an ISnapshotter. Between polls the sim holds the head: this
        /// player's own commands show at once; inside Poll every callback sees confirmed ticks only.</summary>
        public uint PredictWindow;
    }

    /// <summary>The reconnect and join-again tables every client follows (client/policy.go), as libtickrelay keeps them.</summary>
    public static class Policy
    {
        /// <summary>Whether a session reconnects after the relay closed with WebSocket close code code (1006: no close frame).</summary>
        public static bool CloseCodeReconnects(int code) => Session.NativeCloseCodeReconnects(code);
        /// <summary>Whether a session joins again by itself after the relay's Error code.</summary>
        public static bool ErrorCodeJoinsAgain(int code) => Session.NativeErrorCodeJoinsAgain(code);
    }

    /// <summary>A session that could not be made, or game code that threw inside a callback: its status and what to check.</summary>
    public sealed class TickrelayException : Exception
    {
        public Status Status { get; }
        public TickrelayException(Status status, string message, Exception inner = null) : base(message, inner) { Status = status; }
    }
}
