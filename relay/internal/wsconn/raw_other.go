//go:build !unix

package wsconn

import "errors"

// Without unix system calls the relay reads and writes through the connection, and
// TryWriteLocked is unavailable (NonBlocking is false).
const nonBlockingWrites = false

type rawCalls struct{}

func (*rawCalls) init() {}

var errNoRawIO = errors.New("wsconn: no raw reads and writes on this platform")

func (c *Conn) tryWrite([]byte) (int, error) { return 0, errNoRawIO }
func (c *Conn) rawWriteAll([]byte) error     { return errNoRawIO }
func (c *Conn) rawRead([]byte) (int, error)  { return 0, errNoRawIO }
