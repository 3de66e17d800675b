package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
)

func TestTransportFlagsSayWhatIsMissingAndPassTheEndpointOn(t *testing.T) {
	var o client.Options
	assert.ErrorContains(t, transportFlags{transport: "webtransport"}.apply(&o), "needs --webtransport-url")
	assert.ErrorContains(t, transportFlags{transport: "udp"}.apply(&o), "use auto, websocket or webtransport")

	require.NoError(t, transportFlags{}.apply(&o))
	assert.Equal(t, client.TransportAuto, o.Transport)
	assert.Nil(t, o.WebTransport, "auto without an endpoint is WebSocket")

	require.NoError(t, transportFlags{transport: "webtransport", url: "https://h:7402/v1/ws", hashes: []string{"ab"}}.apply(&o))
	assert.Equal(t, client.TransportWebTransport, o.Transport)
	assert.Equal(t, &client.WebTransportEndpoint{URL: "https://h:7402/v1/ws", CertHashes: []string{"ab"}}, o.WebTransport)
}
