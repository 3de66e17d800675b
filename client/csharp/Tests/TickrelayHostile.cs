// TickrelayHostile: the C# binding against one scripted relay of the certification suite
// (client/ts/test/testdata/hostile.json, driven by e2e/native_hostile_test.go), as
// tickrelay-hostile is for the C client: it dials with fast reconnects, runs the suite's
// "tally" sim (it counts ticks and refuses any other sim name; its forensics as
// tickrelay-hostile's), and prints how the session ended as one JSON line:
//   {"ends": "normally"|"with an error", "error": "...", "has_last": 0|1, "last_tick": T, "ticks": N}
//
//   mono TickrelayHostile.exe --url URL [--reconnect-for MS]
//
// With --policy it prints the close and error code tables as the binding reads them,
// for the suite to hold to policy.json. With --hashchain it steps the C# players' port of
// the hashchain (Examples/HashChain.cs) on scenarios read from stdin and prints the hash
// before the first tick and after each, for the suite to hold to the golden hash stream
// (hashchain-golden.json): start SEED PLAYERS / tick TICK COUNT / cmd PLAYER SEQ HEX.
using System;
using System.Text;
using Tickrelay;

// The suite's tally; for forensics its state is the count (8 little-endian bytes), its
// sub-hashes "ticks" and "half" the count and its half, its dump a line of each.
sealed class Tally : ISim, IFailureText, ISnapshotter, ISubHasher, IDumper
{
    public ulong Ticks;
    string refused = "";

    public bool Start(StartInfo st)
    {
        if (st.SimName == "tally") return true;
        refused = "no sim named \"" + st.SimName + "\" here";
        return false;
    }

    public bool Step(ulong tick, Command[] commands) { Ticks++; return true; }
    public ulong Hash() => Ticks;
    public string Error() => refused;
    public byte[] Snapshot() => BitConverter.GetBytes(Ticks); // little-endian where tickrelay runs

    public bool Restore(byte[] state)
    {
        if (state.Length != 8) return false;
        Ticks = BitConverter.ToUInt64(state, 0);
        return true;
    }

    public NamedHash[] SubHashes() => new[] { new NamedHash("ticks", Ticks), new NamedHash("half", Ticks / 2) };
    public string Dump() => "ticks " + Ticks + "\nhalf " + Ticks / 2 + "\n";
}

static class TickrelayHostile
{
    static string Json(string s)
    {
        var b = new StringBuilder("\"");
        foreach (char c in s)
        {
            if (c == '"' || c == '\\') b.Append('\\').Append(c);
            else if (c < 0x20) b.Append("\\u").Append(((int)c).ToString("x4"));
            else b.Append(c);
        }
        return b.Append('"').ToString();
    }

    static int Policy()
    {
        var b = new StringBuilder("{\"closes\": {");
        int[] closes = { 1000, 1001, 1006, 1008, 1009, 1011, 1012, 1013, 1014, 4001, 4002, 4003, 4000, 1005 };
        for (int i = 0; i < closes.Length; i++)
            b.Append(i > 0 ? ", " : "").Append('"').Append(closes[i]).Append("\": ").Append(Tickrelay.Policy.CloseCodeReconnects(closes[i]) ? "true" : "false");
        b.Append("}, \"errors\": {");
        for (int code = 0; code <= 13; code++)
            b.Append(code > 0 ? ", " : "").Append('"').Append(code).Append("\": ").Append(Tickrelay.Policy.ErrorCodeJoinsAgain(code) ? "true" : "false");
        Console.WriteLine(b.Append("}}").ToString());
        return 0;
    }

    static int HashChainGolden()
    {
        HashChain sim = null;
        string line;
        while ((line = Console.In.ReadLine()) != null)
        {
            var f = line.Split(' ');
            if (f[0] == "start")
            {
                sim = new HashChain();
                if (!sim.Start(new StartInfo { SimName = "hashchain", SimVersion = 1, Seed = ulong.Parse(f[1]), Players = uint.Parse(f[2]) })) return 1;
            }
            else if (f[0] == "tick" && sim != null)
            {
                var cmds = new Command[int.Parse(f[2])];
                for (int i = 0; i < cmds.Length; i++)
                {
                    var c = Console.In.ReadLine().Split(' ');
                    string hex = c.Length > 3 ? c[3] : "";
                    var payload = new byte[hex.Length / 2];
                    for (int k = 0; k < payload.Length; k++) payload[k] = Convert.ToByte(hex.Substring(2 * k, 2), 16);
                    cmds[i] = new Command { Player = uint.Parse(c[1]), Seq = uint.Parse(c[2]), Payload = payload };
                }
                if (!sim.Step(ulong.Parse(f[1]), cmds)) return 1;
            }
            else
            {
                Console.Error.WriteLine("bad line: " + line);
                return 1;
            }
            Console.WriteLine(sim.Hash().ToString("x16"));
        }
        return 0;
    }

    static int Main(string[] args)
    {
        if (args.Length == 1 && args[0] == "--policy") return Policy();
        if (args.Length == 1 && args[0] == "--hashchain") return HashChainGolden();
        string url = null;
        uint reconnectFor = 0;
        for (int i = 0; i + 1 < args.Length; i += 2)
        {
            if (args[i] == "--url") url = args[i + 1];
            else if (args[i] == "--reconnect-for") reconnectFor = uint.Parse(args[i + 1]);
        }
        if (url == null)
        {
            Console.Error.WriteLine("usage: mono TickrelayHostile.exe --url URL [--reconnect-for MS] | --policy");
            return 2;
        }
        var sim = new Tally();
        var o = new SessionOptions { Client = "TickrelayHostile (C#)", ReconnectMinMs = 1, ReconnectMaxMs = 20, ReconnectForMs = reconnectFor };
        using (var s = new Session(url, "tok", sim, o))
        {
            Status rc;
            while ((rc = s.Poll(50)) == Status.Ok) { }
            bool has = s.LastTick(out ulong last);
            Console.WriteLine("{\"ends\": \"" + (rc == Status.Ended ? "normally" : "with an error") + "\", \"error\": " +
                Json(rc == Status.Ended ? "" : s.Error) + ", \"has_last\": " + (has ? 1 : 0) + ", \"last_tick\": " + last +
                ", \"ticks\": " + sim.Ticks + "}");
        }
        return 0;
    }
}
