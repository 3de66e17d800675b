package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/lockstep"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/sim/games/skirmish"
)

// A player: join with a token, send an order now and then from OnTick (where reading the
// game is safe), and wait for the match to end. Checksums are reported by the session.
func ExampleDial() {
	// A relay in process, on loopback; a real deployment runs `tickrelay serve`.
	srv, _ := relay.New(relay.Options{TokenSecret: []byte("example-secret-0123456789")}, nil)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	defer srv.Shutdown(context.Background())
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"

	seed := uint64(42)
	match, err := srv.CreateMatch(relay.CreateRequest{
		Sim: skirmish.Name, Players: 2, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 100, MaxDuration: time.Second},
	}, url)
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	var players []*client.Session
	for _, token := range match.PlayerTokens {
		s, err := client.Dial(ctx, match.URL, token, &client.Options{
			OnTick: func(s *client.Session, f lockstep.Frame) {
				if f.Tick%25 == 0 && s.Live() {
					// Every quarter second, buy a soldier.
					_, _, _ = s.Send(skirmish.AppendSpawn(nil, skirmish.Soldier))
				}
			},
		})
		if err != nil {
			panic(err)
		}
		fmt.Println("joined as player", s.Player())
		players = append(players, s)
	}
	for _, s := range players {
		end, err := s.Wait(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("player", s.Player(), "saw the match end:", end.GetReason())
	}
	fmt.Println("in sync:", players[0].Sim().Hash() == players[1].Sim().Hash())
	// Output:
	// joined as player 1
	// joined as player 2
	// player 1 saw the match end: REASON_MAX_DURATION
	// player 2 saw the match end: REASON_MAX_DURATION
	// in sync: true
}

// A spectator joins late, receives the stream from tick 0 (catching up at once), and ends
// with the players' state; OnStream hands over the replay file's records as they arrive.
// A player whose connection drops reconnects by itself and resumes where it stopped.
func ExampleDial_spectatorAndReconnect() {
	srv, _ := relay.New(relay.Options{TokenSecret: []byte("example-secret-0123456789")}, nil)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	defer srv.Shutdown(context.Background())
	url := "ws" + strings.TrimPrefix(web.URL, "http") + "/v1/ws"
	seed := uint64(9)
	match, _ := srv.CreateMatch(relay.CreateRequest{
		Sim: skirmish.Name, Players: 2, SeedOpt: &seed,
		Options: relay.MatchOptions{TickRate: 100, MaxDuration: 2 * time.Second},
	}, url)

	ctx := context.Background()
	var players []*client.Session
	for _, token := range match.PlayerTokens {
		s, err := client.Dial(ctx, match.URL, token, &client.Options{ReconnectMin: 50 * time.Millisecond})
		if err != nil {
			panic(err)
		}
		players = append(players, s)
	}
	// Player 2's network fails at tick 50; the session reconnects and resumes.
	for t, _ := players[1].LastTick(); t < 50; t, _ = players[1].LastTick() {
		time.Sleep(time.Millisecond)
	}
	players[1].Interrupt()

	// A spectator joins a second into the match (tick 100 at 100 Hz).
	for t, _ := players[0].LastTick(); t < 100; t, _ = players[0].LastTick() {
		time.Sleep(time.Millisecond)
	}
	records := 0
	spectator, err := client.Dial(ctx, match.URL, match.SpectatorToken, &client.Options{
		OnStream: func(*client.Session, []byte) { records++ },
	})
	if err != nil {
		panic(err)
	}
	for _, s := range append(players, spectator) {
		if _, err := s.Wait(ctx); err != nil {
			panic(err)
		}
	}
	fmt.Println("player 2 reconnected:", players[1].Reconnects() == 1)
	fmt.Println("spectator got the stream from the start record:", records > 1)
	fmt.Println("all in sync:", players[0].Sim().Hash() == players[1].Sim().Hash() && spectator.Sim().Hash() == players[0].Sim().Hash())
	// Output:
	// player 2 reconnected: true
	// spectator got the stream from the start record: true
	// all in sync: true
}
