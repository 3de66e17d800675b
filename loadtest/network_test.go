package loadtest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLossAskedOfAnEmulatorThatCannotLoseIsAClearError(t *testing.T) {
	_, err := openNetwork(Config{NetLoss: 0.02, NetMode: NetProxy})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "the byte proxy cannot lose packets")

	_, err = openNetwork(Config{NetLoss: 0.02, NetMode: NetAuto, URL: "ws://127.0.0.1:7400/v1/ws"})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "needs the relay in this process")

	nw, err := openNetwork(Config{NetDelay: 1, NetMode: NetAuto, URL: "ws://127.0.0.1:7400/v1/ws"})
	require.NoError(t, err, "a delay alone falls back to the byte proxy")
	defer nw.close()
	assert.Equal(t, NetProxy, nw.rep.Emulator)
	assert.Contains(t, nw.rep.Note, "needs the relay in this process")
}

func TestNoNetworkFlagsMeanLoopbackAsItIs(t *testing.T) {
	nw, err := openNetwork(Config{NetMode: NetAuto})
	require.NoError(t, err)
	defer nw.close()
	assert.Nil(t, nw.pkt)
	assert.Nil(t, nw.report(Config{}), "no network section in the report")
}

func TestNetworkOptionsOutOfRangeAreAConfigError(t *testing.T) {
	c := Config{NetLoss: 1.5}.withDefaults()
	assert.ErrorIs(t, c.validate(), ErrConfig)
	c = Config{NetMode: "carrier-pigeon"}.withDefaults()
	assert.ErrorContains(t, c.validate(), `network emulator "carrier-pigeon"`)
}
