//go:build !unix

package relay

import "errors"

// Without unix system calls the relay reads and writes through the connection, and the
// match actor always queues (deliver).
const nonBlockingWrites = false

type rawCalls struct{}

func (*rawCalls) init() {}

var errNoRawIO = errors.New("relay: no raw reads and writes on this platform")

func (r *rawConn) tryWrite([]byte) (int, error) { return 0, errNoRawIO }
func (r *rawConn) rawWriteAll([]byte) error     { return errNoRawIO }
func (r *rawConn) rawRead([]byte) (int, error)  { return 0, errNoRawIO }
