package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/bot"
	"github.com/tickrelay/tickrelay/internal/testkit/crossarch"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/hashchain"
)

// nativeDoc is the page whose game loops TestTheDocsGameLoopsInCAndCSharpPlayAMatchToOneHash
// builds and runs.
const nativeDoc = repoRoot + "/docs/native-clients.md"

// docListing returns the fenced code block that follows the line `<!-- listing: name -->`
// in the doc at path.
func docListing(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var b strings.Builder
	state := 0 // 0: before the marker, 1: before the fence, 2: inside it
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case state == 0 && strings.TrimSpace(line) == "<!-- listing: "+name+" -->":
			state = 1
		case state == 1:
			require.True(t, strings.HasPrefix(line, "```"), "%s: the line after the %s marker opens its code block", path, name)
			state = 2
		case state == 2 && strings.HasPrefix(line, "```"):
			return b.String()
		case state == 2:
			b.WriteString(line + "\n")
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s has no whole listing %s (a `<!-- listing: %s -->` line, then a fenced code block)", path, name, name)
	return ""
}

// loopLine is the line each game loop prints last.
var loopLine = regexp.MustCompile(`ended at tick (\d+) on hash ([0-9a-f]{16}), (\d+) desyncs\n?$`)

// TestTheDocsGameLoopsInCAndCSharpPlayAMatchToOneHash takes the C and C# game loops from
// docs/native-clients.md as the page shows them, holds each under 100 lines, builds them
// (the C one against libtickrelay.a and the hashchain of sim/games/hashchain/c, the C# one
// against Tickrelay.dll and Examples/HashChain.cs, both warning-free) and plays them in
// one hashchain match beside a Go bot on a `tickrelay serve`: all three end at one tick on
// one hash, with no desync.
func TestTheDocsGameLoopsInCAndCSharpPlayAMatchToOneHash(t *testing.T) {
	t.Parallel() // waits on compilers, a relay's clock and other processes
	if testing.Short() {
		t.Skip("builds the C client and the C# binding and starts a relay process")
	}
	buildNative(t)
	cc := crossarch.Need(t, "cc", "Debian: apt-get install gcc")
	mono := crossarch.Need(t, "mono", "Debian: apt-get install mono-devel")
	mcs := crossarch.Need(t, "mcs", "Debian: apt-get install mono-devel")
	lib, err := filepath.Abs(nativeOut)
	require.NoError(t, err)
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	dir := t.TempDir()

	listings := map[string]string{}
	for _, name := range []string{"game_loop.c", "GameLoop.cs"} {
		text := docListing(t, nativeDoc, name)
		lines := strings.Count(text, "\n")
		assert.Less(t, lines, 100, "the doc's %s is a game loop under 100 lines", name)
		require.Greater(t, lines, 10, "the doc's %s is a whole program", name)
		listings[name] = filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(listings[name], []byte(text), 0o644))
	}
	cGame, csGame := filepath.Join(dir, "game_loop"), filepath.Join(dir, "GameLoop.exe")
	builds := [][]string{
		{cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I" + filepath.Join(root, "client/c/include"), "-I" + filepath.Join(root, "client/c/examples"),
			"-o", cGame, listings["game_loop.c"], filepath.Join(root, "client/c/examples/hashchain_native.c"), filepath.Join(lib, "libtickrelay.a"),
			"-lprotobuf-c", "-lwslay", "-lssl", "-lcrypto"},
		{mcs, "-langversion:7.2", "-warnaserror+", "-nologo", "-out:" + csGame, "-r:" + filepath.Join(lib, "Tickrelay.dll"),
			listings["GameLoop.cs"], filepath.Join(root, "client/csharp/Examples/HashChain.cs")},
	}
	for _, args := range builds {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s:\n%s", filepath.Base(args[0]), out)
	}

	bin := tickrelayBin(t)
	replays, addr := t.TempDir(), freePort(t)
	startRelay(t, bin, relayArgs(addr, replays)...)
	base := "http://" + addr
	waitReady(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := uint64(1003)
	resp, err := relay.PostMatch(ctx, nil, base, "k", relay.CreateRequest{Sim: hashchain.Name, Players: 3, SeedOpt: &seed, MaxDurationSeconds: 3})
	require.NoError(t, err)
	goBot, err := bot.Play(ctx, resp.URL, resp.PlayerTokens[0], seed)
	require.NoError(t, err)
	games := []*nativePlayer{
		startPlayer(t, ctx, nil, cGame, resp.URL, resp.PlayerTokens[1]),
		startPlayer(t, ctx, []string{"LD_LIBRARY_PATH=" + lib, "MONO_PATH=" + lib}, mono, csGame, resp.URL, resp.PlayerTokens[2]),
	}
	st, err := goBot.Wait(ctx)
	require.NoError(t, err)
	for i, g := range games {
		name := []string{"the C game loop", "the C# game loop"}[i]
		require.NoError(t, g.cmd.Wait(), "%s failed; stderr:\n%s", name, g.stderr.String())
		m := loopLine.FindStringSubmatch(g.stdout.String())
		require.NotNil(t, m, "%s's last line: %q", name, g.stdout.String())
		assert.Equal(t, strconv.FormatUint(st.LastTick, 10), m[1], "%s played to the match's end", name)
		assert.Equal(t, fmt.Sprintf("%016x", st.FinalHash), m[2], "%s ends on the Go bot's hash", name)
		assert.Equal(t, "0", m[3], "%s saw no desync", name)
	}
}
