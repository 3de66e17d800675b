package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/stream"
)

func relayError(t *testing.T, code pb.ErrorCode, url string) []byte {
	return record(t, &pb.ServerMessage{Msg: &pb.ServerMessage_Error{Error: &pb.Error{Code: code, Reason: "cluster", RedirectUrl: url}}})
}

func TestAJoinFollowsAClusterRedirectAndReconnectsWhereTheMatchIsMovingTo(t *testing.T) {
	var conns atomic.Int32
	owner := scriptedRelay(t, func(r *relaySide) {
		join := r.read().GetJoin()
		switch conns.Add(1) {
		case 1: // the first join, redirected here: ticks 0..9, then the node fails
			assert.Equal(t, "tok", join.GetToken())
			r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100), stream.AppendIdle(nil, 9))
			r.c.CloseNow()
		case 2: // the match is moving: retry
			r.send(relayError(t, pb.ErrorCode_ERROR_CODE_RETRY, ""))
		default: // it runs here again
			assert.Equal(t, uint64(10), join.GetResumeFrom(), "the session resumes at the next tick")
			r.send(welcome(t, &pb.Welcome{Player: 1}), endRecord(t, 9))
		}
	})
	entry := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(relayError(t, pb.ErrorCode_ERROR_CODE_REDIRECT, owner))
	})
	s, err := client.Dial(context.Background(), entry, "tok", &client.Options{NewSim: newTally, PingInterval: -1})
	require.NoError(t, err)
	end, err := s.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(9), end.GetLastTick())
	assert.Equal(t, 1, s.Reconnects())
	assert.Equal(t, int32(3), conns.Load(), "joined the owner, was told to retry, joined again")
}

func TestARedirectLoopEndsInARelayError(t *testing.T) {
	var self atomic.Pointer[string]
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		r.send(relayError(t, pb.ErrorCode_ERROR_CODE_REDIRECT, *self.Load()))
	})
	self.Store(&url)
	_, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	var rerr *client.RelayError
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_REDIRECT, rerr.Code)
	assert.Equal(t, url, rerr.URL)
}

func TestDialJoinsAgainWhileTheClusterMovesTheMatch(t *testing.T) {
	var conns atomic.Int32
	url := scriptedRelay(t, func(r *relaySide) {
		r.read()
		switch conns.Add(1) {
		case 1: // the match is moving
			r.send(relayError(t, pb.ErrorCode_ERROR_CODE_RETRY, ""))
		default: // it runs here now
			r.send(welcome(t, &pb.Welcome{Player: 1}), startRecord(t, 100), stream.AppendIdle(nil, 2), endRecord(t, 2))
		}
	})
	s, err := client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, ReconnectMin: time.Millisecond})
	require.NoError(t, err)
	end, err := s.Wait(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(2), end.GetLastTick())
	assert.Equal(t, int32(2), conns.Load(), "told to retry, joined again")

	conns.Store(0)
	_, err = client.Dial(context.Background(), url, "tok", &client.Options{NewSim: newTally, PingInterval: -1, NoReconnect: true})
	var rerr *client.RelayError
	require.ErrorAs(t, err, &rerr, "without reconnecting, RETRY is the answer")
	assert.Equal(t, pb.ErrorCode_ERROR_CODE_RETRY, rerr.Code)
	assert.Equal(t, int32(1), conns.Load())
}
