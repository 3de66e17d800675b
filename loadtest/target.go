package loadtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/relay"
	"github.com/tickrelay/tickrelay/web"
)

// Profile labels: every goroutine of the server under test carries side=server, every
// goroutine of the swarm side=swarm, so a CPU profile splits the process's CPU between
// them (what carries neither is the runtime: GC workers, the scheduler, the poller).
const (
	labelKey    = "tickrelay_side"
	labelServer = "server"
	labelSwarm  = "swarm"
)

// target is the relay under test: where to connect and how to create matches.
type target struct {
	wsURL     string   // ws://host:port/v1/ws
	spread    []string // with several URLs (a cluster): where connection i dials, in turn
	apiBase   string   // http://host:port
	adminBase string   // http://host:port of /metrics, or empty
	adminKey  string
	embedded  bool
	client    *http.Client // the match API, through the emulated network if any
	admin     *http.Client // the admin address (metrics), on this namespace's loopback
	stop      func(context.Context) error
}

// startEmbedded starts a relay in this process on 127.0.0.1 (free ports), its
// goroutines labelled side=server. ctx carries the caller's profile labels, which are
// restored on return.
func startEmbedded(ctx context.Context, cfg Config, nw *network) (*target, error) {
	ln, err := nw.serverListen()
	if err != nil {
		return nil, fmt.Errorf("loadtest: listening in the emulated network: %w", err)
	}
	key, err := relay.NewAdminKey()
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	srv, err := relay.New(relay.Options{
		AdminKey: key, ReplayDir: cfg.ReplayDir, // the relay makes up its token secret
		Match:      relay.MatchOptions{TickRate: cfg.TickRate},
		MaxMatches: cfg.Matches + 16, MaxConnections: cfg.Matches*(cfg.Players+cfg.Spectators) + 64,
		// Every bot dials from 127.0.0.1.
		MaxConnectionsPerAddress: cfg.Matches*(cfg.Players+cfg.Spectators) + 64,
	}, nil)
	if err != nil {
		return nil, err
	}
	lo := relay.ListenOptions{Addr: "127.0.0.1:0", Listener: ln, TCP: cfg.TCP, AdminAddr: "127.0.0.1:0", Pprof: true}
	if cfg.transport() != client.TransportWebSocket {
		if lo.WebTransportConn, err = nw.serverListenPacket(); err != nil {
			_ = srv.Shutdown(ctx)
			return nil, fmt.Errorf("loadtest: the WebTransport socket: %w", err)
		}
	}
	var l *relay.Listening
	pprof.Do(ctx, pprof.Labels(labelKey, labelServer), func(context.Context) {
		l, err = srv.Listen(lo)
	})
	if err != nil {
		_ = srv.Shutdown(ctx)
		return nil, err
	}
	t := &target{
		wsURL: "ws://" + l.Addr.String() + relay.PathWS, apiBase: "http://" + l.Addr.String(),
		adminBase: "http://" + l.AdminAddr.String(), adminKey: key, embedded: true,
		client: newHTTPClient(nw.dial), admin: newHTTPClient(nil),
	}
	t.stop = func(ctx context.Context) error {
		err := srv.Shutdown(ctx)
		l.Shutdown(ctx)
		return err
	}
	return t, nil
}

// remoteTarget is a relay that runs elsewhere (on this machine or another).
func remoteTarget(cfg Config) (*target, error) {
	urls := strings.Split(cfg.URL, ",")
	for _, s := range urls {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			return nil, fmt.Errorf("%w: --url %q must be the relay's ws:// or wss:// endpoint, e.g. ws://127.0.0.1:7400/v1/ws (several, comma-separated, for a cluster's nodes)", ErrConfig, s)
		}
	}
	// The match API sits beside the WebSocket endpoint, under a proxy's prefix too.
	api, err := web.Beside(urls[0], relay.PathWS)
	if err != nil {
		return nil, fmt.Errorf("%w: --url: %w", ErrConfig, err)
	}
	t := &target{
		wsURL: urls[0], apiBase: api.String(), adminBase: adminBase(cfg.AdminURL),
		adminKey: cfg.AdminKey, client: newHTTPClient(nil), admin: newHTTPClient(nil),
		stop: func(context.Context) error { return nil },
	}
	if len(urls) > 1 {
		t.spread = urls
	}
	return t, nil
}

// adminBase is the http:// base of an admin address given as host:port or as a URL.
func adminBase(addr string) string {
	addr = strings.TrimRight(addr, "/")
	if addr != "" && !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

// newHTTPClient is an HTTP client dialling through dial (nil: the default dialer).
func newHTTPClient(dial dialFunc) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16, DialContext: dial}}
}

// create makes a match through the relay's API.
func (t *target) create(ctx context.Context, req relay.CreateRequest) (*relay.CreateResponse, error) {
	resp, err := relay.PostMatch(ctx, t.client, t.apiBase, t.adminKey, req)
	if err != nil {
		return nil, relayError(err)
	}
	// A relay behind another name hands out its own URL; the swarm dials what it was given.
	resp.URL = t.wsURL
	return resp, nil
}

// end ends a match through the API.
func (t *target) end(ctx context.Context, id string) error {
	_, err := relay.DeleteMatch(ctx, t.client, t.apiBase, t.adminKey, id)
	var api *relay.APIError
	if errors.As(err, &api) && (api.Code == http.StatusConflict || api.Code == http.StatusNotFound) {
		return nil // a match that already ended (409) or was forgotten (404) needs no ending
	}
	if err != nil {
		return relayError(err)
	}
	return nil
}

func statusError(what string, res *http.Response) error {
	return relayError(relay.ReadAPIError(what, res))
}

// relayError is err as ErrRelay, with the flag to pass when the relay refused the
// admin key.
func relayError(err error) error {
	var api *relay.APIError
	if errors.As(err, &api) && api.Code == http.StatusUnauthorized {
		return fmt.Errorf("%w: %w: pass the relay's --admin-key", ErrRelay, err)
	}
	return fmt.Errorf("%w: %w", ErrRelay, err)
}

// metrics scrapes the admin address's /metrics: series (name with labels, as written) →
// value. Nil, nil when the target has no admin address.
func (t *target) metrics(ctx context.Context) (promSeries, error) {
	if t.adminBase == "" {
		return nil, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.adminBase+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := t.admin.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: metrics: %w", ErrRelay, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, statusError("metrics", res)
	}
	return parseProm(res.Body)
}

// promSeries is a scrape of the Prometheus text format.
type promSeries map[string]float64

func parseProm(r io.Reader) (promSeries, error) {
	out := promSeries{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, errors.Join(ErrRelay, err)
	}
	return out, nil
}

// get returns a series by its exact name (with labels), and whether it was there.
func (p promSeries) get(name string) (float64, bool) {
	v, ok := p[name]
	return v, ok
}
