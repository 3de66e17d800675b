package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tickrelay/tickrelay/client"
)

// transportFlags pick a client's connection: WebSocket, or WebTransport when the match
// API's "webtransport" (its url and cert_hashes) is given, with a fallback under auto.
type transportFlags struct {
	transport      string
	url            string
	hashes         []string
	datagramFrames bool
}

func addTransportFlags(fl *pflag.FlagSet, f *transportFlags) {
	fl.StringVar(&f.transport, "transport", "auto", "connection: websocket, webtransport (UDP; needs --webtransport-url) or auto (WebTransport when --webtransport-url is given, WebSocket if it does not connect within 3s)")
	fl.StringVar(&f.url, "webtransport-url", "", "the relay's WebTransport endpoint for the match (the match API's webtransport.url, e.g. https://127.0.0.1:7402/v1/ws)")
	fl.BoolVar(&f.datagramFrames, "datagram-frames", false, "on WebTransport, a player takes its live frames from the datagrams alone and fetches on the stream what they miss")
	fl.StringSliceVar(&f.hashes, "cert-hash", nil, "hex SHA-256 of the relay's self-signed certificate (the match API's webtransport.cert_hashes; repeatable, or comma-separated)")
}

// apply sets o's transport; it says what is missing for the one asked for.
func (f transportFlags) apply(o *client.Options) error {
	t := client.TransportAuto // unset (a caller without the flags): auto
	if f.transport != "" {
		var err error
		if t, err = client.ParseTransport(f.transport); err != nil {
			return err
		}
	}
	if t == client.TransportWebTransport && f.url == "" {
		return fmt.Errorf("--transport webtransport needs --webtransport-url (from the match API's webtransport)")
	}
	o.Transport, o.DatagramFrames = t, f.datagramFrames
	if f.url != "" {
		o.WebTransport = &client.WebTransportEndpoint{URL: f.url, CertHashes: f.hashes}
	}
	return nil
}
