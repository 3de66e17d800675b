package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/tickrelay/tickrelay/internal/lib/buildinfo"
	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/replay"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm"
	"github.com/tickrelay/tickrelay/sim/runtime/wasm/meter"
)

type serveFlags struct {
	listen, admin, secret, logLevel string
	tlsCert, tlsKey, simDir         string
	webTransport                    string // --webtransport: the UDP address, or empty
	webhookSecret                   string
	pprof, logJSON, peerHeals       bool
	grace                           time.Duration
	lobby, maxDuration              time.Duration
	opts                            relay.Options
	cluster                         clusterFlags
	tcp                             tcpFlags
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the relay",
		Long: `Run the relay: the WebSocket endpoint (/v1/ws) and the match API (/v1/matches) on
--listen, metrics, health and optional pprof on --admin.

SIGINT or SIGTERM stops taking connections, ends every match with an end record
(reason: shutdown) and closes the sockets; a second signal stops at once.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{selfLoads: "logs the modules it loads"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(f.logLevel, f.logJSON)
			if err != nil {
				return err
			}
			defer log.Sync()
			if f.cluster.enabled() && !cmd.Flags().Changed("idle-flush") {
				f.opts.IdleFlush = relay.ClusterIdleFlush
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, f, log, nil)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7400", "address of the WebSocket endpoint and the match API")
	fl.StringVar(&f.admin, "admin", "127.0.0.1:7401", "address of /metrics, /healthz, /readyz (and pprof); empty disables it")
	fl.BoolVar(&f.pprof, "pprof", false, "serve /debug/pprof/ on the admin address")
	fl.StringVar(&f.opts.ReplayDir, "replay-dir", "replays", "directory for replay files (created if missing); empty disables recording")
	fl.StringVar(&f.secret, "token-secret", "", "hex secret (>= 16 bytes) that signs join tokens; generated and logged once when empty")
	fl.StringVar(&f.opts.AdminKey, "admin-key", "", "key the match API requires (Authorization: Bearer <key>); generated and logged once when empty")
	fl.StringArrayVar(&f.opts.Backend.JWTKeys, "jwt-key", nil, "PEM public key file (Ed25519, ECDSA P-256 or RSA) whose JWTs are accepted as join tokens; repeatable (docs/operations.md, \"Wiring your backend\")")
	fl.StringVar(&f.opts.Backend.JWKS, "jwt-jwks", "", "URL of a JWK set whose keys' JWTs are accepted as join tokens; refreshed every 5 minutes and when a token names an unknown key id")
	fl.StringVar(&f.opts.Backend.WebhookURL, "webhook-url", "", "URL that receives every match's lifecycle events as signed JSON POSTs (a match may name its own: webhook_url); needs --webhook-secret and --replay-dir (docs/operations.md, \"Wiring your backend\")")
	fl.StringVar(&f.webhookSecret, "webhook-secret", "", "secret that signs the webhooks (X-Tickrelay-Signature: t=<unix>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM): serve wss:// and https:// (with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.StringVar(&f.webTransport, "webtransport", "", "UDP address (host:port) to serve WebTransport on as well (HTTP/3; frames and commands as datagrams); its TLS is --tls-cert's, else a self-signed certificate the relay makes and rotates, whose hashes the match API hands out (docs/operations.md, \"WebTransport\"); empty: WebSocket only")
	addTCPFlags(fl, &f.tcp, "every accepted connection")
	fl.StringVar(&f.simDir, "sim-dir", "", simDirUsage)
	fl.StringSliceVar(&f.opts.AllowedSims, "allowed-sims", nil, "the only sim names the match API accepts, e.g. skirmish,mygame (default: any name of up to 64 letters, digits, '.', '_', '-')")
	fl.BoolVar(&f.opts.NoArbiter, "no-arbiter", false, "never re-simulate a match to judge a desync (by default the relay does where it has the match's sim: built in or from --sim-dir; docs/forensics.md)")
	fl.BoolVar(&f.peerHeals, "peer-heals", false, "by default, let a match this relay has no sim for heal a desync's minority with a majority player's state, unverified (a match's options.peer_heals overrides it; off: a colluding majority could move an honest player into its game; docs/forensics.md)")
	fl.Var(&f.opts.OnDesync, "on-desync", "what a desync does: heal (send the players the arbiter found wrong the right state), report (record it only) or end (end the match); docs/forensics.md")
	fl.StringSliceVar(&f.opts.AllowedOrigins, "allowed-origins", nil, "web page hosts allowed to open a WebSocket (browser Origin check), e.g. game.example.com,*.example.com")
	fl.IntVar(&f.opts.MaxConnectionsPerAddress, "max-connections-per-address", relay.DefaultMaxConnectionsPerAddress, "most connections from one IP (raise it behind a proxy)")
	fl.StringVar(&f.opts.PublicURL, "public-url", "", "WebSocket URL handed out with tokens (default: derived from the request)")
	fl.IntVar(&f.opts.Match.TickRate, "tick-rate", relay.DefaultTickRate, "ticks per second")
	fl.IntVar(&f.opts.Match.InputDelay, "input-delay", relay.DefaultInputDelay, "initial suggested input delay, ticks")
	fl.IntVar(&f.opts.Match.MinInputDelay, "min-input-delay", relay.DefaultMinInputDelay, "lowest adaptive input delay, ticks")
	fl.IntVar(&f.opts.Match.MaxInputDelay, "max-input-delay", relay.DefaultMaxInputDelay, "highest adaptive input delay, ticks")
	fl.IntVar(&f.opts.Match.MaxLead, "max-lead", relay.DefaultMaxLead, "how far past the last sealed tick a command may target, ticks")
	fl.IntVar(&f.opts.Match.ChecksumEvery, "checksum-every", relay.DefaultChecksumEvery, "checksum cadence, ticks")
	fl.IntVar(&f.opts.Match.JudgeTimeout, "judge-timeout", relay.DefaultJudgeTimeout, "ticks after which a checkpoint is judged with the reports it has")
	fl.IntVar(&f.opts.Match.MaxPayload, "max-payload", relay.DefaultMaxPayload, "largest command payload, bytes")
	fl.IntVar(&f.opts.Match.MaxCommandsPerTick, "max-commands-per-tick", relay.DefaultMaxCommandsPerTick, "commands per player per tick")
	fl.DurationVar(&f.lobby, "lobby-timeout", relay.DefaultLobbyTimeout, "how long a match waits for its players")
	fl.DurationVar(&f.maxDuration, "max-duration", relay.DefaultMaxDuration, "longest match")
	fl.DurationVar(&f.opts.Match.SpectatorDelay, "spectator-delay", 0, "how far behind the live match spectators are held (e.g. 2m for competitive play)")
	fl.IntVar(&f.opts.MaxSpectators, "max-spectators", relay.DefaultMaxSpectators, "most spectators per match")
	fl.IntVar(&f.opts.SpectatorQueue, "spectator-queue", relay.DefaultSpectatorQueue, "batches queued per spectator before it is dropped as too slow")
	fl.Int64Var(&f.opts.MaxMessageBytes, "max-message-bytes", relay.DefaultMaxMessageBytes, "largest client message, bytes")
	fl.Float64Var(&f.opts.MessagesPerSecond, "messages-per-second", relay.DefaultMessagesPerSecond, "client messages per second per connection (token bucket rate)")
	fl.IntVar(&f.opts.MessageBurst, "message-burst", relay.DefaultMessageBurst, "token bucket burst per connection")
	fl.IntVar(&f.opts.SendQueue, "send-queue", relay.DefaultSendQueue, "messages queued per connection before it is dropped as too slow")
	fl.IntVar(&f.opts.MaxMatches, "max-matches", relay.DefaultMaxMatches, "most running matches")
	fl.IntVar(&f.opts.MaxConnections, "max-connections", relay.DefaultMaxConnections, "most connections")
	fl.Uint64Var(&f.opts.IdleFlush, "idle-flush", replay.DefaultIdleFlush, "longest run of empty ticks kept off disk: how many ticks a match resumed after a crash skips if a player is not back")
	fl.DurationVar(&f.opts.RejoinGrace, "rejoin-grace", relay.DefaultRejoinGrace, "how long a dropped player keeps its slot, and a match resumed after a crash waits for its players")
	fl.DurationVar(&f.opts.KeepEnded, "keep-ended", relay.DefaultKeepEnded, "how long an ended match is kept: a player who joins it meanwhile gets the rest of its stream and the End")
	fl.DurationVar(&f.opts.JoinTimeout, "join-timeout", relay.DefaultJoinTimeout, "how long a new connection may take to send its join")
	fl.DurationVar(&f.opts.MaxTickLateness, "max-tick-lateness", relay.DefaultMaxTickLateness, "a tick sealed this late means the relay is behind its clock: counted, and new matches are refused (503, Retry-After) meanwhile")
	fl.DurationVar(&f.grace, "shutdown-grace", 10*time.Second, "how long shutdown waits for matches and connections to close")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of console text")
	f.cluster.register(fl)
	return cmd
}

// serve runs a relay until ctx ends, then shuts it down within the grace period. A
// second SIGINT or SIGTERM during the shutdown forces the stop: the connections are cut
// at once and serve returns an error saying so (unfinished replay files resume at the
// next start). ready, if set, receives the bound addresses.
func serve(ctx context.Context, f serveFlags, log *zap.Logger, ready func(listen, admin net.Addr)) error {
	o, err := serveOptions(f, log)
	if err != nil {
		return err
	}
	var node *joined
	if f.cluster.enabled() {
		if node, err = joinCluster(ctx, f.cluster, f.listen, f.tlsCert != "", log); err != nil {
			return err
		}
		defer node.stop()
		log = log.With(zap.String("node", node.node.Name()))
		o.Cluster = node.node
		if o.PublicURL == "" {
			o.PublicURL = node.url
		}
	}
	srv, handler, err := startRelay(o, node, log)
	if err != nil {
		return err
	}
	hs, err := srv.Listen(relay.ListenOptions{Addr: f.listen, Handler: handler, TLSCert: f.tlsCert, TLSKey: f.tlsKey, WebTransportAddr: f.webTransport, AdminAddr: f.admin, Pprof: f.pprof, TCP: f.tcp.options()})
	if err != nil {
		return err
	}
	if took, err := tcptune.Probe(f.tcp.options()); err == nil {
		log.Info("tcp options of accepted connections", zap.Stringer("applied", took))
	}
	log.Info("relay listening", zap.Stringer("listen", hs.Addr), zap.Bool("tls", f.tlsCert != ""), zap.Any("admin", hs.AdminAddr),
		zap.String("replay_dir", o.ReplayDir), zap.String("build", o.Build), zap.Any("webtransport", hs.WebTransportAddr))
	if ready != nil {
		ready(hs.Addr, hs.AdminAddr)
	}
	select {
	case <-ctx.Done():
	case err := <-hs.Err():
		return err
	}
	return shutDown(f.grace, srv, node, hs, log)
}

// serveOptions are the relay's options from serve's flags: the token secret and admin
// key (generated, and said so, when not given), the sim modules of --sim-dir.
func serveOptions(f serveFlags, log *zap.Logger) (relay.Options, error) {
	o := f.opts
	o.Match.LobbyTimeout, o.Match.MaxDuration = f.lobby, f.maxDuration
	o.Build = buildinfo.Read().String()
	if f.peerHeals {
		o.Match.PeerHeals = &f.peerHeals
	}
	o.Backend.WebhookSecret = []byte(f.webhookSecret)
	if o.Backend.WebhookURL != "" && f.webhookSecret == "" {
		return o, fmt.Errorf("--webhook-url needs --webhook-secret: the backend checks every delivery's signature with it")
	}
	if f.cluster.enabled() && (f.secret == "" || f.opts.AdminKey == "") {
		// Every node checks every node's tokens and admin key: they must be configured.
		return o, fmt.Errorf("a cluster node needs the cluster's --token-secret and --admin-key (the same on every node)")
	}
	if f.secret != "" {
		b, err := hex.DecodeString(f.secret)
		if err != nil {
			return o, fmt.Errorf("--token-secret must be hex: %w", err)
		}
		o.TokenSecret = b
	} else {
		var err error
		if o.TokenSecret, err = relay.NewSecret(); err != nil {
			return o, err
		}
		log.Warn("no --token-secret given: generated one; pass it to keep tokens valid across restarts",
			zap.String("token_secret", hex.EncodeToString(o.TokenSecret)))
		o.SecretGenerated = true
	}
	if o.AdminKey == "" {
		var err error
		if o.AdminKey, err = relay.NewAdminKey(); err != nil {
			return o, err
		}
		log.Warn("no --admin-key given: generated one; the match API needs it as Authorization: Bearer <key>",
			zap.String("admin_key", o.AdminKey))
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return o, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	mods, err := loadSimDir(f.simDir, nil)
	if err != nil {
		return o, err
	}
	for _, m := range mods {
		fields := []zap.Field{zap.String("sim", m.Name), zap.Uint32("version", m.Version), zap.String("file", m.File), zap.Strings("agreeing", m.Agreeing)}
		if m.Effect != nil {
			fields = append(fields, zap.Stringer("agreement_commands", m.Effect))
		}
		log.Info("sim module loaded: match params for it are checked at creation", fields...)
		if _, warn := agreement(m); warn != "" {
			log.Warn(warn)
		}
	}
	if o.PageModules, err = pageModules(f.simDir, mods); err != nil {
		return o, err
	}
	return o, nil
}

// startRelay makes the relay and takes up the matches it owes: a cluster node joins the
// cluster's failover (JetStream holds each match's truth); a single relay resumes the
// unfinished matches of its replay directory, or refuses to start and says why. It
// returns the relay and the handler of its public address.
func startRelay(o relay.Options, node *joined, log *zap.Logger) (*relay.Server, http.Handler, error) {
	srv, err := relay.New(o, log)
	if err != nil {
		return nil, nil, err
	}
	if node != nil {
		if err := node.node.Start(srv); err != nil {
			return nil, nil, err
		}
		return srv, node.node.Handler(), nil
	}
	n, err := srv.ResumeMatches()
	if err != nil {
		return nil, nil, err
	}
	if n > 0 {
		log.Info("resumed unfinished matches from the replay directory", zap.Int("matches", n))
	}
	return srv, srv.Handler(), nil
}

// shutDown ends the relay within grace: a cluster node hands its matches to the other
// nodes first, a single relay ends them; then the HTTP servers drain. A second
// SIGINT/SIGTERM stops it at once (the unfinished matches resume from their files at the
// next start).
func shutDown(grace time.Duration, srv *relay.Server, node *joined, hs *relay.Listening, log *zap.Logger) error {
	log.Info("shutting down: ending matches", zap.Duration("grace", grace))
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// A second signal forces the stop: the shutdown's context ends, so every wait below
	// returns at once, and the servers are closed instead of drained.
	force := make(chan os.Signal, 1)
	signal.Notify(force, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(force)
	var forced atomic.Bool
	go func() {
		select {
		case <-force:
			log.Warn("second signal: stopping now")
			forced.Store(true)
			cancel()
		case <-sctx.Done():
		}
	}()
	if node != nil {
		// A cluster node gives its matches to the other nodes instead of ending them.
		n, err := node.node.HandOver(sctx)
		if err != nil {
			log.Warn("handing matches over failed; they end here", zap.Error(err))
		} else if n > 0 {
			log.Info("matches handed over to other nodes", zap.Int("matches", n))
		}
	}
	err := srv.Shutdown(sctx)
	hs.Shutdown(sctx)
	if err != nil && forced.Load() {
		return fmt.Errorf("stopped at once by a second signal; matches that did not end resume from their replay files at the next start: %w", err)
	}
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// pageModules are the modules of the sim directory the relay runs, metered, for its
// pages (relay.Options.PageModules): the one file kept of each sim.
func pageModules(dir string, mods []*wasm.Module) (map[string][]byte, error) {
	if len(mods) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(mods))
	for _, m := range mods {
		b, err := os.ReadFile(filepath.Join(dir, m.File))
		if err != nil {
			return nil, fmt.Errorf("--sim-dir %s: %w", dir, err)
		}
		if out[m.File], err = meter.Meter(b); err != nil {
			return nil, fmt.Errorf("--sim-dir %s: metering %s for the pages: %w", dir, m.File, err)
		}
	}
	return out, nil
}
