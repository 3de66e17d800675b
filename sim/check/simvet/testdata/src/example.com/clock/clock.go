// Package clock holds bad snippets that read the world outside the sim.
package clock

import (
	crand "crypto/rand"
	"hash/maphash"
	"math/rand"
	randv2 "math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/tickrelay/tickrelay/sim"
)

type Game struct{ x int64 }

func (g *Game) Step(tick uint64, cmds []sim.Command) { // want Step:`^time: clock.\(\*Game\).Step → clock.\(\*Game\).now$`
	g.now()
	g.since()
	g.sleep()
	g.globalRand()
	g.globalRandV2()
	g.cryptoRand()
	g.mapHash()
	g.env()
	g.args()
	g.cores()
	g.arch()
}

func (g *Game) Hash() uint64 { return uint64(g.x) }

func (g *Game) now() {
	g.x = time.Now().UnixNano() // want `^time: time.Now reads the wall clock.*\(call chain: clock.\(\*Game\).Step → clock.\(\*Game\).now\)$`
}

func (g *Game) since() {
	var start time.Time
	g.x = int64(time.Since(start)) // want `^time: time.Since reads the wall clock`
}

func (g *Game) sleep() {
	time.Sleep(time.Millisecond) // want `^time: time.Sleep`
}

func (g *Game) globalRand() {
	g.x += int64(rand.Intn(6)) // want `^rand: rand.Intn draws from the process-wide generator`
}

func (g *Game) globalRandV2() {
	g.x += randv2.Int64() // want `^rand: rand.Int64 draws from the process-wide generator`
}

func (g *Game) cryptoRand() {
	var b [8]byte
	crand.Read(b[:]) // want `^rand: rand.Read is random by design`
	g.x = int64(b[0])
}

func (g *Game) mapHash() {
	g.x = int64(maphash.String(maphash.MakeSeed(), "unit")) // want `^rand: maphash.String hashes with a seed` `^rand: maphash.MakeSeed`
}

func (g *Game) env() {
	if os.Getenv("CHEAT") != "" { // want `^os: os.Getenv reaches the machine outside the sim`
		g.x++
	}
}

func (g *Game) args() {
	g.x = int64(len(os.Args)) // want `^os: os.Args`
}

func (g *Game) cores() {
	g.x = int64(runtime.NumCPU()) // want `^runtime: runtime.NumCPU differs by machine`
}

func (g *Game) arch() {
	if runtime.GOARCH == "arm64" { // want `^runtime: runtime.GOARCH`
		g.x--
	}
}

// New builds a game; its initial state is sim state too.
func New(cfg sim.Config) *Game { // want New:`^time: clock.New$`
	return &Game{x: time.Now().Unix()} // want `^time: time.Now .*\(call chain: clock.New\)$`
}
