// HashChain: a port of sim/games/hashchain (the same FNV-1a 64 chain over every tick and
// command), the sim of the C# example players; an ISim and an ISnapshotter.
using System;
using Tickrelay;

sealed class HashChain : ISim, ISnapshotter
{
    const ulong Offset = 0xcbf29ce484222325UL, Prime = 0x100000001b3UL;
    ulong state, next;

    static ulong Mix(ulong d, ulong v, int bytes)
    {
        for (int i = 0; i < bytes; i++) d = (d ^ (byte)(v >> (8 * i))) * Prime;
        return d;
    }

    public bool Start(StartInfo st)
    {
        if (st.SimName != "hashchain" || st.SimVersion != 1) return false;
        state = Mix(Mix(Offset, st.Seed, 8), st.Players, 4);
        return true;
    }

    public bool Step(ulong tick, Command[] cmds)
    {
        ulong d = Mix(Mix(Offset, state, 8), tick, 8);
        foreach (var c in cmds)
        {
            d = Mix(Mix(Mix(d, c.Player, 4), c.Seq, 4), (ulong)c.Payload.Length, 4);
            foreach (byte b in c.Payload) d = (d ^ b) * Prime;
        }
        state = d;
        next = tick + 1;
        return true;
    }

    public ulong Hash() => state;

    public byte[] Snapshot()
    {
        var b = new byte[16];
        BitConverter.GetBytes(state).CopyTo(b, 0); // little-endian on every platform tickrelay runs
        BitConverter.GetBytes(next).CopyTo(b, 8);
        return b;
    }

    public bool Restore(byte[] s)
    {
        if (s.Length != 16) return false;
        state = BitConverter.ToUInt64(s, 0);
        next = BitConverter.ToUInt64(s, 8);
        return true;
    }
}
