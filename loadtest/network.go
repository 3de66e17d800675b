// The network between the bots and the relay: loopback as it is, the byte-level
// delaying proxy, or the packet-level emulator (internal/lib/netem), chosen by Config.NetMode.

package loadtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/tickrelay/tickrelay/client"
	"github.com/tickrelay/tickrelay/internal/lib/netem"
	"github.com/tickrelay/tickrelay/internal/lib/tcptune"
)

// Config.NetMode's values.
const (
	// NetAuto is the packet level where it can run, else the byte proxy (which cannot
	// lose packets: a run that asks for loss then fails with the reason).
	NetAuto = "auto"
	// NetPacket is the packet level or an error saying why not.
	NetPacket = "packet"
	// NetProxy is the byte-level delaying proxy (no root, no loss).
	NetProxy = "proxy"
)

// NetworkReport is the emulated network a run went through, as applied.
type NetworkReport struct {
	// Emulator is "packet" (network namespaces, nftables loss, a TUN forwarder for
	// delay) or "proxy" (the byte-level delaying proxy on loopback).
	Emulator string `json:"emulator"`
	// Applied reads as what was applied, e.g. "2% loss each way, loopback round trip".
	Applied     string  `json:"applied"`
	LossPercent float64 `json:"loss_percent"`
	BurstMs     float64 `json:"burst_ms,omitempty"`
	DelayMs     float64 `json:"delay_ms"` // each way
	JitterMs    float64 `json:"jitter_ms"`
	// ForwardedPackets are the packets the forwarder moved (both ways), QueueDrops those
	// its full queues dropped (beyond the loss asked for; should be 0).
	ForwardedPackets int64 `json:"forwarded_packets,omitempty"`
	QueueDrops       int64 `json:"queue_drops,omitempty"`
	// ForwarderLag is how much later than due the forwarder sent packets (its own
	// scheduling on this machine): added to the delay asked for.
	ForwarderLag *netem.Lag `json:"forwarder_lag,omitempty"`
	// TCP is what TCP did on the emulated link over the window, both ends together
	// (the packet level only): segments sent and retransmitted, and how they were
	// recovered.
	TCP *netem.TCPCounters `json:"tcp,omitempty"`
	// Forwarder says where the delay forwarder ran, at which priority.
	Forwarder string `json:"forwarder,omitempty"`
	// Note says why the packet level was not used, where NetAuto fell back.
	Note string `json:"note,omitempty"`
}

// TCPReport is what the sockets took of Config.TCP (a probe of this kernel): the
// embedded relay's accepted sockets and the bots' dialled ones get the same options.
type TCPReport struct {
	Asked   string          `json:"asked"`
	Applied tcptune.Applied `json:"applied"`
}

func (c Config) netOptions() netem.Options {
	return netem.Options{Loss: c.NetLoss, Burst: c.NetBurst, Delay: c.NetDelay, Jitter: c.NetJitter, Seed: c.Seed}
}

func (c Config) emulating() bool {
	return c.NetLoss > 0 || c.NetDelay > 0 || c.NetJitter > 0
}

// network is the way from the bots to the relay.
type network struct {
	pkt   *netem.Net   // the packet level, or nil
	proxy *netem.Proxy // the byte proxy, or nil
	rep   *NetworkReport
	// tcp0 and tcp1 are the link's TCP counters as the window opened and closed.
	tcp0, tcp1 netem.TCPCounters
	tcpOK      bool
	// tcp is the dialer of every bot's socket: tuned, and in the client's namespace
	// with the packet level.
	tcp *net.Dialer
}

// openNetwork opens the packet-level emulator where cfg asks for it and can have it;
// the byte proxy opens later, in front of the started relay (proxyTo).
func openNetwork(cfg Config) (*network, error) {
	nw := &network{tcp: &net.Dialer{Control: tcptune.Control(cfg.TCP)}}
	if !cfg.emulating() {
		return nw, nil
	}
	o := cfg.netOptions()
	lossy := o.Loss > 0
	switch {
	case cfg.NetMode == NetProxy && lossy:
		return nil, fmt.Errorf("%w: --net-loss needs the packet-level emulator; the byte proxy cannot lose packets (use --net-mode %s or %s, as root)", ErrConfig, NetPacket, NetAuto)
	case cfg.NetMode == NetProxy:
		nw.rep = &NetworkReport{Emulator: NetProxy}
		return nw, nil
	case cfg.URL != "":
		why := "the packet-level emulator needs the relay in this process (no --url): its namespaces have no route to another relay"
		if lossy || cfg.NetMode == NetPacket {
			return nil, fmt.Errorf("%w: %s", ErrConfig, why)
		}
		nw.rep = &NetworkReport{Emulator: NetProxy, Note: why}
		return nw, nil
	}
	n, err := netem.Open(o)
	if err != nil {
		// The byte proxy carries TCP only: a bot on WebTransport would bypass it.
		udp := cfg.transport() != client.TransportWebSocket
		if !errors.Is(err, netem.ErrUnavailable) || lossy || udp || cfg.NetMode == NetPacket {
			return nil, fmt.Errorf("loadtest: the network emulator: %w", err)
		}
		nw.rep = &NetworkReport{Emulator: NetProxy, Note: err.Error()}
		return nw, nil
	}
	nw.pkt = n
	nw.rep = &NetworkReport{Emulator: NetPacket}
	return nw, nil
}

// serverListen is where an embedded relay listens: in the server's namespace, or on
// loopback (nil).
func (nw *network) serverListen() (net.Listener, error) {
	if nw.pkt == nil {
		return nil, nil
	}
	return nw.pkt.Server.Listen("tcp4", net.JoinHostPort(nw.pkt.ServerIP.String(), "0"))
}

// serverListenPacket is the embedded relay's WebTransport socket: in the server's
// namespace, or on loopback.
func (nw *network) serverListenPacket() (net.PacketConn, error) {
	if nw.pkt == nil {
		return net.ListenPacket("udp4", "127.0.0.1:0")
	}
	return nw.pkt.Server.ListenPacket("udp4", net.JoinHostPort(nw.pkt.ServerIP.String(), "0"))
}

// listenUDP opens a bot's WebTransport socket: in the client's namespace with the
// packet level, else nil (the system's, from wherever this process is).
func (nw *network) listenUDP() func() (net.PacketConn, error) {
	if nw == nil || nw.pkt == nil {
		return nil
	}
	return func() (net.PacketConn, error) { return nw.pkt.Client.ListenPacket("udp4", ":0") }
}

// dial dials a bot's (or the API client's) connection.
func (nw *network) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if nw.pkt != nil {
		return nw.pkt.Client.DialContext(nw.tcp)(ctx, network, addr)
	}
	return nw.tcp.DialContext(ctx, network, addr)
}

// inClient runs f (which starts swarm processes) so that what it starts is in the
// client's namespace.
func (nw *network) inClient(f func() error) error {
	if nw.pkt == nil {
		return f()
	}
	return nw.pkt.Client.Do(f)
}

// proxyTo starts the byte proxy in front of wsURL if the run uses it, and returns the
// URL the bots dial.
func (nw *network) proxyTo(cfg Config, wsURL string) (string, error) {
	if nw.rep == nil || nw.rep.Emulator != NetProxy {
		return wsURL, nil
	}
	u, err := url.Parse(wsURL)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrConfig, wsURL, err)
	}
	px, err := netem.Start(u.Host, cfg.NetDelay, cfg.NetJitter)
	if err != nil {
		return "", err
	}
	nw.proxy = px
	u.Host = px.Addr()
	return u.String(), nil
}

// window reads the link's TCP counters as the window opens (open) and closes.
func (nw *network) window(open bool) {
	if nw == nil || nw.pkt == nil {
		return
	}
	c, err := nw.pkt.Counters()
	if open {
		nw.tcp0, nw.tcpOK = c, err == nil
		return
	}
	nw.tcp1, nw.tcpOK = c, nw.tcpOK && err == nil
}

// report fills in what was applied (after the run: the forwarder's counters).
func (nw *network) report(cfg Config) *NetworkReport {
	r := nw.rep
	if r == nil {
		return nil
	}
	o := cfg.netOptions()
	r.LossPercent, r.BurstMs = o.Loss*100, ms64(o.Burst)
	r.DelayMs, r.JitterMs = ms64(o.Delay), ms64(o.Jitter)
	r.Applied = o.String()
	if r.Emulator == NetProxy {
		r.Applied = fmt.Sprintf("byte proxy on loopback: %s +0..%s each way per chunk, no loss", o.Delay, o.Jitter)
	}
	if nw.pkt != nil {
		r.Forwarder = nw.pkt.Forwarder
		var lag netem.Lag
		r.ForwardedPackets, r.QueueDrops, lag = nw.pkt.Forwarded()
		if r.ForwardedPackets > 0 {
			r.ForwarderLag = &lag
		}
		if nw.tcpOK {
			d := nw.tcp1.Sub(nw.tcp0)
			r.TCP = &d
		}
	}
	return r
}

func (nw *network) close() {
	if nw.proxy != nil {
		nw.proxy.Close()
	}
	if nw.pkt != nil {
		_ = nw.pkt.Close()
	}
}
