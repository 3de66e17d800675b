package bot

import (
	"context"
	"io"
	"sync"

	"github.com/tickrelay/tickrelay/client"
	pb "github.com/tickrelay/tickrelay/proto/tickrelay/v1"
	"github.com/tickrelay/tickrelay/replay"
)

// Spectator watches a match: it runs the sim on the stream and, if asked, saves what it
// receives as a replay file.
type Spectator struct {
	sess *client.Session

	mu    sync.Mutex
	bytes int64
	err   error
}

// Watch dials url with a spectator token. If save is not nil, the replay header and every
// stream record received are written to it: a spectator's copy of the replay.
func Watch(ctx context.Context, url, token string, save io.Writer) (*Spectator, error) {
	sp := &Spectator{}
	opts := &client.Options{Name: "tickrelay-spectator"}
	if save != nil {
		head := replay.AppendHeader(nil)
		if _, err := save.Write(head); err != nil {
			return nil, err
		}
		opts.OnStream = func(_ *client.Session, rec []byte) {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			if sp.err == nil {
				n, err := save.Write(rec)
				sp.bytes += int64(n)
				sp.err = err
			}
		}
	}
	sess, err := client.Dial(ctx, url, token, opts)
	if err != nil {
		return nil, err
	}
	sp.sess = sess
	return sp, nil
}

// Session returns the spectator's connection.
func (sp *Spectator) Session() *client.Session { return sp.sess }

// Wait blocks until the match ends; it returns the End record, the final state hash and
// the bytes saved.
func (sp *Spectator) Wait(ctx context.Context) (end *pb.End, hash uint64, saved int64, err error) {
	end, err = sp.sess.Wait(ctx)
	if s := sp.sess.Sim(); s != nil {
		hash = s.Hash()
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err == nil {
		err = sp.err
	}
	return end, hash, sp.bytes, err
}
