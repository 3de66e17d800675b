// TickrelayExample: a player of the hashchain sim, the C# client's whole game loop.
//
//   mono TickrelayExample.exe --url ws://127.0.0.1:8080/v1/ws --token TOKEN [--predict]
//
// --predict has the session predict (a window of 8 ticks): between polls the sim runs
// ahead, its own commands in it the moment they are sent.
//
// It joins, steps its hashchain (HashChain.cs, a port of sim/games/hashchain) on
// every sealed tick, sends an 8-byte command every 3 live ticks, and when the match ends
// prints one JSON line: {"player": N, "last_tick": T, "final_hash": "<16 hex>", "desyncs": D}.
using System;
using Tickrelay;

static class TickrelayExample
{
    static int Main(string[] args)
    {
        string url = null, token = null;
        uint predict = 0;
        bool bad = false;
        for (int i = 0; i < args.Length; i++)
        {
            if (args[i] == "--predict") predict = 8;
            else if (i + 1 < args.Length && args[i] == "--url") url = args[++i];
            else if (i + 1 < args.Length && args[i] == "--token") token = args[++i];
            else bad = true;
        }
        if (url == null || token == null || bad)
        {
            Console.Error.WriteLine("usage: mono TickrelayExample.exe --url ws://HOST:PORT/v1/ws --token TOKEN [--predict]");
            return 2;
        }
        var sim = new HashChain();
        int desyncs = 0;
        var options = new SessionOptions { Client = "TickrelayExample (C#)", PredictWindow = predict };
        using (var s = new Session(url, token, sim, options))
        {
            var payload = new byte[8];
            s.OnTick += (tick, cmds) =>
            {
                if (!s.Live || tick % 3 != 0) return;
                BitConverter.GetBytes(s.Player).CopyTo(payload, 0);
                BitConverter.GetBytes((uint)tick).CopyTo(payload, 4);
                s.Send(payload, out _);
            };
            s.OnDesync += tick => { desyncs++; Console.Error.WriteLine("desync at tick " + tick); };
            Status rc;
            while ((rc = s.Poll(100)) == Status.Ok) { }
            if (rc != Status.Ended)
            {
                Console.Error.WriteLine("TickrelayExample: " + rc + ": " + s.Error);
                return 1;
            }
            s.LastTick(out ulong last);
            Console.WriteLine("{\"player\": " + s.Player + ", \"last_tick\": " + last + ", \"final_hash\": \"" + sim.Hash().ToString("x16") +
                "\", \"desyncs\": " + desyncs + "}");
        }
        return 0;
    }
}
